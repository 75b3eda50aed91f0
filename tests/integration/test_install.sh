#!/bin/bash
# meson install: into a scratch DESTDIR, from the build directory the
# binaries came from (the parent of ESV_BIN_DIR).  Checks that
# - the files installed, relative to the configured prefix and sorted, are
#   install-files.txt (a file outside the prefix shows as its absolute
#   path); the list is for the default options: torchrun_alias=true adds
#   bin/torchrun, a build without esv-rdzv-etcd (-Detcd) drops it;
# - every file of etc/ (but etc/meson.build; in a git checkout, every one
#   git tracks) is among the examples installed under
#   datadir/doc/esv/examples, in the same layout;
# - the run, finish, check and *.sh scripts there are executable, the
#   rest not;
# - the example job.ini is what it claims: the installed esv-supervise
#   --dry-run reads it as it reads an empty job.ini; no setting in it is
#   live; every setting --dry-run prints has a "#key = ..." line; and the
#   defaults it shows ("#key = value", not "(unset: ...)"), all taken out
#   of their comments at once, still read as an empty job.ini.
. "$(dirname "$0")/lib.sh"
esv_setup 120

BUILD=$(cd "$ESV_BIN_DIR/.." && pwd)
SRC=$(cd "$ESV_TEST_DIR/../.." && pwd)
LIST=$ESV_TEST_DIR/install-files.txt
[ -f "$BUILD/meson-info/intro-buildoptions.json" ] ||
    skip "$BUILD is not a meson build directory"
command -v meson >/dev/null || skip "meson is not in PATH"
[ -f "$LIST" ] || fail "$LIST is missing"

# The options that decide where and what: prefix, datadir, torchrun_alias,
# and whether esv-rdzv-etcd is a target at all.
meson introspect --buildoptions "$BUILD" >"$T/options.json" 2>"$T/intro.err" ||
    fail "meson introspect --buildoptions $BUILD: $(cat "$T/intro.err")"
meson introspect --targets "$BUILD" >"$T/targets.json" 2>"$T/intro.err" ||
    fail "meson introspect --targets $BUILD: $(cat "$T/intro.err")"
opt()
{
	"$PY" -c 'import json, sys
for o in json.load(open(sys.argv[1])):
    if o["name"] == sys.argv[2]:
        v = o["value"]
        print(str(v).lower() if isinstance(v, bool) else v)' \
	    "$T/options.json" "$1"
}
PREFIX=$(opt prefix)
ALIAS=$(opt torchrun_alias)
[ -n "$PREFIX" ] || fail "no prefix in $T/options.json"
ETCD=$("$PY" -c 'import json, sys
print(any(t["name"] == "esv-rdzv-etcd" for t in json.load(open(sys.argv[1]))))' \
    "$T/targets.json")
note "build $BUILD, prefix $PREFIX, torchrun_alias $ALIAS, esv-rdzv-etcd $ETCD"

# The build is meson test's to bring up to date: install what it has.
DEST=$T/dest
meson install --no-rebuild --quiet --destdir "$DEST" -C "$BUILD" \
    >"$T/install.out" 2>"$T/install.err" ||
    fail "meson install failed: $(tail -20 "$T/install.err")"

# Every file and symbolic link, prefix stripped.
(cd "$DEST" && find . ! -type d) | sed 's|^\.||' |
    awk -v p="${PREFIX%/}/" 'index($0, p) == 1 { $0 = substr($0, length(p) + 1) } { print }' |
    LC_ALL=C sort >"$T/installed.txt"
grep -v '^$' "$LIST" >"$T/want.unsorted"
[ "$ALIAS" = true ] && echo bin/torchrun >>"$T/want.unsorted"
if [ "$ETCD" != True ]; then
	grep -vx 'bin/esv-rdzv-etcd' "$T/want.unsorted" >"$T/want.tmp"
	mv "$T/want.tmp" "$T/want.unsorted"
fi
LC_ALL=C sort "$T/want.unsorted" >"$T/want.txt"
if ! diff -u "$T/want.txt" "$T/installed.txt" >"$T/list.diff"; then
	cat "$T/list.diff" >&2
	fail "installed files differ from install-files.txt (- listed, + installed; diff above)"
fi

# Layout of the examples: etc/ as it is in the sources.
# under OPTION: where the directory option OPTION installs to, in DEST.
under()
{
	local d
	d=$(opt "$1")
	case $d in
	/*) echo "$DEST$d" ;;
	*) echo "$DEST${PREFIX%/}/$d" ;;
	esac
}
DOC=$(under datadir)/doc/esv
EX=$DOC/examples
[ -d "$EX" ] || fail "no $EX"
# In a git checkout the files git knows (not a file being written), else
# every file.
if git -C "$SRC" ls-files -- etc >"$T/etc.files" 2>/dev/null &&
    [ -s "$T/etc.files" ]; then
	sed -i 's|^etc/||' "$T/etc.files"
else
	(cd "$SRC/etc" && find . -type f ! -name '.*' ! -name '*~') |
	    sed 's|^\./||' >"$T/etc.files"
fi
missing=$(grep -vx meson.build "$T/etc.files" | LC_ALL=C sort |
    while read -r f; do
	[ ! -f "$SRC/etc/$f" ] || [ -f "$EX/$f" ] || echo "$f"
	done)
[ -z "$missing" ] || fail "etc/ files not installed under $EX:" $missing
for f in README.md LICENSE; do
	cmp -s "$SRC/$f" "$DOC/$f" || fail "$DOC/$f differs from $SRC/$f"
done

# Modes: scripts executable, the rest not.
scripts=$(find "$EX" -type f \( -name run -o -name finish -o -name check \
    -o -name '*.sh' \) | LC_ALL=C sort)
[ "$(echo "$scripts" | grep -c .)" -ge 7 ] ||
    fail "fewer than 7 run, finish, check and *.sh scripts under $EX: $scripts"
for f in $scripts; do
	[ -n "$(find "$f" -perm -u+x)" ] ||
	    fail "${f#"$DEST"} is not executable: $(stat -c %A "$f")"
done
notx=$(find "$DOC" -type f ! \( -name run -o -name finish -o -name check \
    -o -name '*.sh' \) -perm /111)
[ -z "$notx" ] || fail "executable but no script:" $notx

# The example job.ini, read by the installed supervisor.
ISUP=$(under bindir)/esv-supervise
[ -x "$ISUP" ] || fail "no $ISUP"
INI=$EX/job.ini
[ -f "$INI" ] || fail "no $INI"
# dry NAME: esv-supervise --dry-run on $T/NAME (its job.ini made already)
# in a clean environment, so that no PET_ variable hides a job.ini value;
# settings without the jobdir= line in $T/NAME.out.
dry()
{
	local rc
	env -i PATH="$PATH" ESV_ITEST_TAG="$T" \
	    ${ASAN_OPTIONS+"ASAN_OPTIONS=$ASAN_OPTIONS"} \
	    ${UBSAN_OPTIONS+"UBSAN_OPTIONS=$UBSAN_OPTIONS"} \
	    ${LSAN_OPTIONS+"LSAN_OPTIONS=$LSAN_OPTIONS"} \
	    timeout 30 "$ISUP" --dry-run "$T/$1" -- true \
	    >"$T/$1.raw" 2>"$T/$1.err"
	rc=$?
	[ "$rc" -eq 0 ] || fail "esv-supervise --dry-run with the $1 job.ini exited $rc: $(head -c 2000 "$T/$1.err")"
	grep -v '^jobdir=' "$T/$1.raw" >"$T/$1.out"
	[ -s "$T/$1.out" ] || fail "esv-supervise --dry-run printed no setting for $1"
}
mkjob()
{
	mkdir -m 700 "$T/$1" && cat >"$T/$1/job.ini" && chmod 600 "$T/$1/job.ini" ||
	    fail "cannot make $T/$1"
}
same()
{
	diff -u "$T/empty.out" "$T/$1.out" >"$T/$1.diff" ||
	    fail "$2 (- empty job.ini, + $1): $(cat "$T/$1.diff")"
}

mkjob empty </dev/null
dry empty
mkjob example <"$INI"
dry example
same example "the installed example job.ini does not read as an empty one"

# Nothing live: --dry-run cannot tell a set master_port 29500 from an
# unset one, which picks a free port.
live=$(grep -nEv '^[[:space:]]*([#;].*)?$|^\[(job|env)\]$' "$INI")
[ -z "$live" ] || fail "settings not commented out in the example job.ini: $live"

# Every setting shown.
for k in $(sed -n 's/^\([a-z_]*\)=.*/\1/p' "$T/empty.out") entrypoint args; do
	[ "$k" = command ] && continue
	grep -qE "^#$k =( |\$)" "$INI" || fail "example job.ini: no '#$k = ...' line"
done

# The defaults it shows are the defaults.
awk '/^\[/ { s = $0 } s == "[job]" && /^#[a-z_]+ = / && !/^#[a-z_]+ = \(unset: / {
	sub(/^#/, "") } { print }' "$INI" >"$T/defaults.ini" ||
    fail "cannot uncomment $INI"
mkjob defaults <"$T/defaults.ini"
n=$(grep -cE '^[a-z_]+ = ' "$T/defaults/job.ini")
[ "$n" -ge 20 ] || fail "only $n defaults shown in the example job.ini"
dry defaults
same defaults "the defaults shown in the example job.ini are not esv's"
note "$(wc -l <"$T/installed.txt") files installed as listed; $n defaults in job.ini checked"
exit 0
