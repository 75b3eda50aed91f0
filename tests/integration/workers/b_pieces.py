# Writes LINES lines of exactly 200 characters (newline included) to
# stdout, each in 3 separate os.write calls, to check that the
# supervisor never mixes workers' lines.  Line i of local rank r:
# "r<r> i<i:05d> " then a filler that depends on r and i, then "\n".
import os
import sys

LINES = int(sys.argv[1])
RANK = int(os.environ["LOCAL_RANK"])


def line(r, i):
    head = "r%d i%05d " % (r, i)
    fill = chr(ord("a") + (r + i) % 26) * (199 - len(head))
    return head + fill + "\n"


for i in range(LINES):
    b = line(RANK, i).encode()
    os.write(1, b[:70])
    os.write(1, b[70:140])
    os.write(1, b[140:])
