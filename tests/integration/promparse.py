#!/usr/bin/env python3
"""A strict reader of Prometheus' text exposition format 0.0.4, for the
tests (promtool checks the same when Debian's prometheus is installed).

    promparse.py FILE [NAME{LABELS}=VALUE ...]

Exits 1 with "line N: why" on the first departure from the format:
comment lines other than HELP and TYPE, a TYPE after its samples or twice,
a family's samples not together, a sample without a TYPE, bad names,
labels, escapes or values, a counter not named *_total, a duplicate
series, no trailing newline.  Each NAME{LABELS}=VALUE argument is then
checked against the samples (labels written as in the exposition)."""
import math
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
LABEL_VALUE = r'"(?:[^"\\\n]|\\[\\"n])*"'
SAMPLE = re.compile(r"^(%s)(\{(?:%s=%s(?:,%s=%s)*,?)?\})? (\S+)( -?\d+)?$"
                    % (NAME, LABEL, LABEL_VALUE, LABEL, LABEL_VALUE))
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


def value(text):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise ValueError("not a number: %r" % text)
    return float(text)


def family_of(name, types):
    for suffix in ("_bucket", "_count", "_sum"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) in ("histogram",
                                                          "summary"):
            return base
    return name


def parse(text):
    if text and not text.endswith("\n"):
        raise SyntaxError("last line: no newline at the end")
    types, helps, samples, done, sampled = {}, {}, {}, set(), set()
    current = None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d" % n
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (%s) (.*)" % NAME, line)
            if not m:
                if re.match(r"# (HELP|TYPE) ", line):
                    raise SyntaxError("%s: malformed %s" % (where, line))
                continue        # a plain comment is allowed
            kind, name, rest = m.groups()
            table = helps if kind == "HELP" else types
            if name in table:
                raise SyntaxError("%s: second %s for %s" % (where, kind, name))
            if name in sampled:
                raise SyntaxError("%s: %s after the samples of %s"
                                  % (where, kind, name))
            if kind == "TYPE":
                if rest not in TYPES:
                    raise SyntaxError("%s: unknown type %r" % (where, rest))
                if rest == "counter" and not name.endswith("_total"):
                    raise SyntaxError("%s: counter %s not named *_total"
                                      % (where, name))
            elif not rest.strip():
                raise SyntaxError("%s: empty HELP for %s" % (where, name))
            if current is not None and current != name:
                done.add(current)
            current = name
            table[name] = rest
            continue
        if not line.strip():
            raise SyntaxError("%s: blank line" % where)
        m = SAMPLE.match(line)
        if not m:
            raise SyntaxError("%s: not a sample: %r" % (where, line))
        name, labels, val = m.group(1), m.group(2) or "", m.group(3)
        fam = family_of(name, types)
        if fam not in types:
            raise SyntaxError("%s: %s has no TYPE before it" % (where, name))
        if fam in done or fam != current:
            raise SyntaxError("%s: the samples of %s are not together"
                              % (where, fam))
        try:
            v = value(val)
        except ValueError as e:
            raise SyntaxError("%s: %s" % (where, e))
        if types[fam] == "counter" and (v < 0 or math.isnan(v)):
            raise SyntaxError("%s: counter %s is %s" % (where, name, val))
        sampled.add(fam)
        key = name + labels.replace(",}", "}")
        if key in samples:
            raise SyntaxError("%s: second sample of %s" % (where, key))
        samples[key] = v
    return samples


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        text = f.read()
    try:
        samples = parse(text)
    except SyntaxError as e:
        sys.exit("promparse: %s: %s" % (sys.argv[1], e))
    for want in sys.argv[2:]:
        key, _, val = want.rpartition("=")
        if key not in samples:
            sys.exit("promparse: no sample %s" % key)
        if samples[key] != float(val):
            sys.exit("promparse: %s is %s, wanted %s" % (key, samples[key],
                                                         val))


if __name__ == "__main__":
    main()
