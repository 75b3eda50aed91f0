"""agent_c10d.py ENDPOINT RUN_ID WORKER LOG_DIR

One torch 1.13 elastic agent, as torchrun builds it (LocalElasticAgent
through torch.distributed.launcher), in a job of two nodes of one worker
each whose c10d rendezvous keeps its state in the TCPStore at ENDPOINT
with is_host=false: this agent only connects there, whoever serves it.
The worker (WORKER, run by /usr/bin/python3) prints to our stdout.
Exit 0 when the job succeeded."""
import sys

from torch.distributed.launcher.api import LaunchConfig, elastic_launch


def main():
    endpoint, run_id, worker, log_dir = sys.argv[1:5]
    config = LaunchConfig(
        min_nodes=2, max_nodes=2, nproc_per_node=1, run_id=run_id,
        rdzv_backend="c10d", rdzv_endpoint=endpoint,
        rdzv_configs={"is_host": False, "join_timeout": 60},
        max_restarts=0, monitor_interval=0.1, log_dir=log_dir)
    elastic_launch(config, sys.executable)(worker)


if __name__ == "__main__":
    main()
