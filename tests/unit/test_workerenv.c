#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../../supervisor/spawn/workerenv.h"

static struct job_config cfg;

/* 1 node, nproc 2, static rendezvous: torchrun --nproc-per-node 2. */
static struct attempt_info
single_node(void)
{
	struct attempt_info ai;

	memset(&cfg, 0, sizeof(cfg));
	strlcpy(cfg.role, "default", sizeof(cfg.role));
	strlcpy(cfg.run_id, "none", sizeof(cfg.run_id));
	cfg.nproc_per_node = 2;
	cfg.max_restarts = 0;
	memset(&ai, 0, sizeof(ai));
	ai.cfg = &cfg;
	assert_int_equal(ranks_assign_static(0, 1, 2, &ai.ranks), 0);
	ai.master_addr = "127.0.0.1";
	ai.master_port = 29500;
	ai.restart_count = 0;
	ai.attempt_dir = "/tmp/logs/none_x/attempt_0";
	ai.use_agent_store = true;
	return ai;
}

static void
test_contract(void **state)
{
	static const char *want0[] = {
		"LOCAL_RANK=0", "RANK=0", "GROUP_RANK=0", "ROLE_RANK=0",
		"ROLE_NAME=default", "LOCAL_WORLD_SIZE=2", "WORLD_SIZE=2",
		"GROUP_WORLD_SIZE=1", "ROLE_WORLD_SIZE=2",
		"MASTER_ADDR=127.0.0.1", "MASTER_PORT=29500",
		"TORCHELASTIC_RESTART_COUNT=0", "TORCHELASTIC_MAX_RESTARTS=0",
		"TORCHELASTIC_RUN_ID=none", "TORCHELASTIC_USE_AGENT_STORE=True",
		"TORCHELASTIC_ERROR_FILE=/tmp/logs/none_x/attempt_0/0/error.json",
		"NCCL_ASYNC_ERROR_HANDLING=1",
		"TORCH_NCCL_ASYNC_ERROR_HANDLING=1", "OMP_NUM_THREADS=1",
	};
	const size_t n = sizeof(want0) / sizeof(want0[0]);
	char *base[] = { "PATH=/bin", NULL };
	struct attempt_info ai = single_node();
	struct envbuf eb = { NULL, 0, 0 };
	size_t i;

	(void)state;
	assert_int_equal(workerenv_own(&eb, &ai, 0, base), 0);
	assert_int_equal(eb.len, n);
	for (i = 0; i < n; i++)
		assert_string_equal(eb.vars[i], want0[i]);
	assert_null(eb.vars[eb.len]);
	assert_null(envbuf_get(&eb, "PATH"));
	envbuf_free(&eb);

	assert_int_equal(workerenv_own(&eb, &ai, 1, base), 0);
	assert_int_equal(eb.len, n);
	assert_string_equal(envbuf_get(&eb, "LOCAL_RANK"), "1");
	assert_string_equal(envbuf_get(&eb, "RANK"), "1");
	assert_string_equal(envbuf_get(&eb, "ROLE_RANK"), "1");
	assert_string_equal(envbuf_get(&eb, "TORCHELASTIC_ERROR_FILE"),
	    "/tmp/logs/none_x/attempt_0/1/error.json");
	envbuf_free(&eb);

	ai.use_agent_store = false;
	assert_int_equal(workerenv_own(&eb, &ai, 0, base), 0);
	assert_string_equal(envbuf_get(&eb, "TORCHELASTIC_USE_AGENT_STORE"),
	    "False");
	envbuf_free(&eb);
}

static void
test_second_node_ranks(void **state)
{
	struct attempt_info ai = single_node();
	struct envbuf eb = { NULL, 0, 0 };

	(void)state;
	assert_int_equal(ranks_assign_static(1, 2, 4, &ai.ranks), 0);
	ai.restart_count = 2;
	cfg.max_restarts = 3;
	assert_int_equal(workerenv_own(&eb, &ai, 2, NULL), 0);
	assert_string_equal(envbuf_get(&eb, "RANK"), "6");
	assert_string_equal(envbuf_get(&eb, "ROLE_RANK"), "6");
	assert_string_equal(envbuf_get(&eb, "GROUP_RANK"), "1");
	assert_string_equal(envbuf_get(&eb, "WORLD_SIZE"), "8");
	assert_string_equal(envbuf_get(&eb, "TORCHELASTIC_RESTART_COUNT"), "2");
	assert_string_equal(envbuf_get(&eb, "TORCHELASTIC_MAX_RESTARTS"), "3");
	envbuf_free(&eb);
}

static void
test_full_inherits_and_overrides(void **state)
{
	char *base[] = {
		"PATH=/bin", "RANK=99", "HOME=/root", "RANK=98", "WEIRD", NULL,
	};
	struct attempt_info ai = single_node();
	struct envbuf eb = { NULL, 0, 0 };
	size_t i, nrank = 0;

	(void)state;
	assert_int_equal(workerenv_full(&eb, &ai, 1, base), 0);
	/* Inherited ones keep their order; RANK is replaced in place. */
	assert_string_equal(eb.vars[0], "PATH=/bin");
	assert_string_equal(eb.vars[1], "RANK=1");
	assert_string_equal(eb.vars[2], "HOME=/root");
	assert_string_equal(eb.vars[3], "WEIRD");
	assert_string_equal(eb.vars[4], "LOCAL_RANK=1");
	for (i = 0; i < eb.len; i++)
		if (strncmp(eb.vars[i], "RANK=", 5) == 0)
			nrank++;
	assert_int_equal(nrank, 1);
	assert_int_equal(eb.len, 4 + 19 - 1);
	assert_null(eb.vars[eb.len]);
	assert_string_equal(envbuf_get(&eb, "HOME"), "/root");
	envbuf_free(&eb);
}

static void
test_omp_rule(void **state)
{
	char *with[] = { "OMP_NUM_THREADS=8", NULL };
	struct attempt_info ai = single_node();
	struct envbuf eb = { NULL, 0, 0 };

	(void)state;
	/* Inherited: the user's value reaches the worker but is not "ours". */
	assert_int_equal(workerenv_own(&eb, &ai, 0, with), 0);
	assert_null(envbuf_get(&eb, "OMP_NUM_THREADS"));
	envbuf_free(&eb);
	assert_int_equal(workerenv_full(&eb, &ai, 0, with), 0);
	assert_string_equal(envbuf_get(&eb, "OMP_NUM_THREADS"), "8");
	envbuf_free(&eb);

	/* One worker per node: torchrun sets nothing. */
	cfg.nproc_per_node = 1;
	assert_int_equal(ranks_assign_static(0, 1, 1, &ai.ranks), 0);
	assert_int_equal(workerenv_own(&eb, &ai, 0, NULL), 0);
	assert_null(envbuf_get(&eb, "OMP_NUM_THREADS"));
	envbuf_free(&eb);
}

static void
test_nccl_inherited(void **state)
{
	char *base[] = {
		"NCCL_ASYNC_ERROR_HANDLING=0", "TORCH_NCCL_ASYNC_ERROR_HANDLING=3",
		NULL,
	};
	struct attempt_info ai = single_node();
	struct envbuf eb = { NULL, 0, 0 };

	(void)state;
	assert_int_equal(workerenv_own(&eb, &ai, 0, base), 0);
	assert_string_equal(envbuf_get(&eb, "NCCL_ASYNC_ERROR_HANDLING"), "0");
	assert_string_equal(envbuf_get(&eb, "TORCH_NCCL_ASYNC_ERROR_HANDLING"),
	    "3");
	envbuf_free(&eb);
}

static void
test_extra_env(void **state)
{
	char *base[] = { "FOO=old", NULL };
	struct attempt_info ai = single_node();
	struct envbuf eb = { NULL, 0, 0 };

	(void)state;
	cfg.extra_env[0] = (struct env_pair){ "FOO", "bar" };
	cfg.extra_env[1] = (struct env_pair){ "MASTER_PORT", "1234" };
	cfg.nextra_env = 2;
	assert_int_equal(workerenv_own(&eb, &ai, 0, base), 0);
	assert_string_equal(eb.vars[eb.len - 1], "FOO=bar");
	/* [env] is laid last, so it may override esv's own values. */
	assert_string_equal(envbuf_get(&eb, "MASTER_PORT"), "1234");
	envbuf_free(&eb);
	assert_int_equal(workerenv_full(&eb, &ai, 0, base), 0);
	assert_string_equal(eb.vars[0], "FOO=bar");
	envbuf_free(&eb);
}

static void
test_error_file(void **state)
{
	struct attempt_info ai = single_node();
	struct envbuf eb = { NULL, 0, 0 };

	(void)state;
	ai.attempt_dir = "/var/log/j/run_ab/attempt_3";
	assert_int_equal(workerenv_own(&eb, &ai, 1, NULL), 0);
	assert_string_equal(envbuf_get(&eb, "TORCHELASTIC_ERROR_FILE"),
	    "/var/log/j/run_ab/attempt_3/1/error.json");
	envbuf_free(&eb);
	ai.attempt_dir = "";
	assert_int_equal(workerenv_own(&eb, &ai, 1, NULL), 0);
	assert_string_equal(envbuf_get(&eb, "TORCHELASTIC_ERROR_FILE"), "");
	envbuf_free(&eb);
}

static void
test_envbuf_set(void **state)
{
	struct envbuf eb = { NULL, 0, 0 };
	char name[16];
	int i;

	(void)state;
	assert_null(envbuf_get(&eb, "A"));
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "V%d", i);
		assert_int_equal(envbuf_set(&eb, name, "x"), 0);
		assert_null(eb.vars[eb.len]);
	}
	assert_int_equal(envbuf_set(&eb, "V1", "y"), 0);
	assert_int_equal(eb.len, 200);
	assert_string_equal(eb.vars[1], "V1=y");
	assert_string_equal(envbuf_get(&eb, "V10"), "x");
	assert_string_equal(env_lookup(eb.vars, "V199"), "x");
	assert_null(env_lookup(eb.vars, "V"));
	envbuf_free(&eb);
	assert_null(eb.vars);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_contract),
		cmocka_unit_test(test_second_node_ranks),
		cmocka_unit_test(test_full_inherits_and_overrides),
		cmocka_unit_test(test_omp_rule),
		cmocka_unit_test(test_nccl_inherited),
		cmocka_unit_test(test_extra_env),
		cmocka_unit_test(test_error_file),
		cmocka_unit_test(test_envbuf_set),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
