# torch's own timer client, unchanged: FileTimerClient on the FIFO that
# esv-supervise hands out in TORCHELASTIC_TIMER_FILE, and expires(after=1)
# around a step.  The first attempt's step (3 s) overruns the deadline and
# must be killed; the second attempt's (0.2 s) fits and succeeds.  Each
# attempt appends "arm <restart> <pid> <wall time>" to $REC before arming
# and "done <restart> <pid>" after the step.
import os
import time

import torch.distributed.elastic.timer as timer

e = os.environ
rc = int(e["TORCHELASTIC_RESTART_COUNT"])
timer.configure(timer.FileTimerClient(e["TORCHELASTIC_TIMER_FILE"]))
with open(e["REC"], "a") as f:
    f.write("arm %d %d %.6f\n" % (rc, os.getpid(), time.time()))
with timer.expires(after=1):
    time.sleep(3 if rc == 0 else 0.2)
with open(e["REC"], "a") as f:
    f.write("done %d %d\n" % (rc, os.getpid()))
