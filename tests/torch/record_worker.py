# torch's @record on main: rank 1 raises, so its error file is written;
# the other ranks wait to be stopped by the supervisor.
import os
import time

from torch.distributed.elastic.multiprocessing.errors import record


@record
def main():
    if os.environ["RANK"] == "1":
        raise ValueError("boom from rank 1")
    time.sleep(120)


if __name__ == "__main__":
    main()
