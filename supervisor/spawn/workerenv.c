#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctldir.h"
#include "workerenv.h"

/* Whether entry is "name=...". */
static int
entry_is(const char *entry, const char *name, size_t nlen)
{
	return strncmp(entry, name, nlen) == 0 && entry[nlen] == '=';
}

const char *
env_lookup(char **env, const char *name)
{
	size_t nlen = strlen(name);

	for (; env != NULL && *env != NULL; env++)
		if (entry_is(*env, name, nlen))
			return *env + nlen + 1;
	return NULL;
}

const char *
envbuf_get(const struct envbuf *eb, const char *name)
{
	return env_lookup(eb->vars, name);
}

/* Takes ownership of entry; vars[len] stays NULL for execve. */
static int
envbuf_push(struct envbuf *eb, char *entry)
{
	char **nv;
	size_t cap;

	if (eb->len + 1 >= eb->cap) {
		cap = eb->cap ? eb->cap * 2 : 64;
		if ((nv = reallocarray(eb->vars, cap, sizeof(*nv))) == NULL) {
			free(entry);
			return -1;
		}
		eb->vars = nv;
		eb->cap = cap;
	}
	eb->vars[eb->len++] = entry;
	eb->vars[eb->len] = NULL;
	return 0;
}

/*
 * Replaces the first entry of that name in place; later duplicates (an
 * environ may have them) are dropped so that no reader sees a stale one.
 */
int
envbuf_set(struct envbuf *eb, const char *name, const char *value)
{
	size_t i, j, nlen = strlen(name);
	char *entry;
	int found = 0;

	if (asprintf(&entry, "%s=%s", name, value) == -1)
		return -1;
	for (i = j = 0; i < eb->len; i++) {
		if (!entry_is(eb->vars[i], name, nlen)) {
			eb->vars[j++] = eb->vars[i];
			continue;
		}
		free(eb->vars[i]);
		if (!found)
			eb->vars[j++] = entry;
		found = 1;
	}
	if (found) {
		eb->len = j;
		eb->vars[j] = NULL;
		return 0;
	}
	return envbuf_push(eb, entry);
}

int
envbuf_unset(struct envbuf *eb, const char *name)
{
	size_t i, j, nlen = strlen(name);

	for (i = j = 0; i < eb->len; i++) {
		if (entry_is(eb->vars[i], name, nlen))
			free(eb->vars[i]);
		else
			eb->vars[j++] = eb->vars[i];
	}
	eb->len = j;
	if (eb->vars != NULL)
		eb->vars[j] = NULL;
	return 0;
}

int
envbuf_copy(struct envbuf *eb, char **env)
{
	char *dup;

	for (; env != NULL && *env != NULL; env++)
		if ((dup = strdup(*env)) == NULL || envbuf_push(eb, dup) == -1)
			return -1;
	return 0;
}

void
envbuf_free(struct envbuf *eb)
{
	size_t i;

	for (i = 0; i < eb->len; i++)
		free(eb->vars[i]);
	free(eb->vars);
	eb->vars = NULL;
	eb->len = eb->cap = 0;
}

static int
set_uint(struct envbuf *eb, const char *name, unsigned v)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", v);
	return envbuf_set(eb, name, buf);
}

/* torch keeps the agent's value of these and defaults them to "1". */
static int
set_inherited_or(struct envbuf *eb, char **base_env, const char *name,
    const char *dflt)
{
	const char *v = env_lookup(base_env, name);

	return envbuf_set(eb, name, v != NULL ? v : dflt);
}

static int
set_error_file(struct envbuf *eb, const struct attempt_info *ai,
    unsigned local_rank)
{
	char path[PATH_MAX];

	if (ai->attempt_dir == NULL || ai->attempt_dir[0] == '\0')
		return envbuf_set(eb, "TORCHELASTIC_ERROR_FILE", "");
	if (ctl_error_path(path, sizeof(path), ai->attempt_dir,
	    local_rank) == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return envbuf_set(eb, "TORCHELASTIC_ERROR_FILE", path);
}

static int
set_ranks(struct envbuf *eb, const struct attempt_info *ai,
    unsigned local_rank)
{
	const struct rank_assignment *r = &ai->ranks;

	if (set_uint(eb, "LOCAL_RANK", local_rank) == -1 ||
	    set_uint(eb, "RANK", r->base_rank + local_rank) == -1 ||
	    set_uint(eb, "GROUP_RANK", r->group_rank) == -1 ||
	    set_uint(eb, "ROLE_RANK", r->base_role_rank + local_rank) == -1 ||
	    envbuf_set(eb, "ROLE_NAME", ai->cfg->role) == -1 ||
	    set_uint(eb, "LOCAL_WORLD_SIZE", r->local_world_size) == -1 ||
	    set_uint(eb, "WORLD_SIZE", r->world_size) == -1 ||
	    set_uint(eb, "GROUP_WORLD_SIZE", r->group_world_size) == -1 ||
	    set_uint(eb, "ROLE_WORLD_SIZE", r->role_world_size) == -1)
		return -1;
	return 0;
}

int
workerenv_own(struct envbuf *eb, const struct attempt_info *ai,
    unsigned local_rank, char **base_env)
{
	const struct job_config *cfg = ai->cfg;
	int i;

	if (set_ranks(eb, ai, local_rank) == -1 ||
	    envbuf_set(eb, "MASTER_ADDR",
	    ai->master_addr != NULL ? ai->master_addr : "") == -1 ||
	    set_uint(eb, "MASTER_PORT", ai->master_port) == -1 ||
	    set_uint(eb, "TORCHELASTIC_RESTART_COUNT", ai->restart_count) == -1 ||
	    set_uint(eb, "TORCHELASTIC_MAX_RESTARTS", cfg->max_restarts) == -1 ||
	    envbuf_set(eb, "TORCHELASTIC_RUN_ID", cfg->run_id) == -1 ||
	    envbuf_set(eb, "TORCHELASTIC_USE_AGENT_STORE",
	    ai->use_agent_store ? "True" : "False") == -1 ||
	    set_error_file(eb, ai, local_rank) == -1 ||
	    (ai->timer_file != NULL &&
	    envbuf_set(eb, "TORCHELASTIC_TIMER_FILE", ai->timer_file) == -1) ||
	    set_inherited_or(eb, base_env, "NCCL_ASYNC_ERROR_HANDLING",
	    "1") == -1 ||
	    set_inherited_or(eb, base_env, "TORCH_NCCL_ASYNC_ERROR_HANDLING",
	    "1") == -1)
		return -1;
	/* torchrun's own default; an inherited value is the user's, not ours. */
	if (cfg->nproc_per_node > 1 &&
	    env_lookup(base_env, "OMP_NUM_THREADS") == NULL &&
	    envbuf_set(eb, "OMP_NUM_THREADS", "1") == -1)
		return -1;
	for (i = 0; i < cfg->nextra_env; i++)
		if (envbuf_set(eb, cfg->extra_env[i].name,
		    cfg->extra_env[i].value) == -1)
			return -1;
	return 0;
}

int
workerenv_full(struct envbuf *eb, const struct attempt_info *ai,
    unsigned local_rank, char **base_env)
{
	struct envbuf own = { NULL, 0, 0 };
	char **e, *dup;
	size_t i;
	int rc = -1;

	for (e = base_env; e != NULL && *e != NULL; e++) {
		if ((dup = strdup(*e)) == NULL ||
		    envbuf_push(eb, dup) == -1)
			goto out;
	}
	if (workerenv_own(&own, ai, local_rank, base_env) == -1)
		goto out;
	for (i = 0; i < own.len; i++) {
		char *eq = strchr(own.vars[i], '=');

		*eq = '\0';
		if (envbuf_set(eb, own.vars[i], eq + 1) == -1)
			goto out;
	}
	rc = 0;
out:
	envbuf_free(&own);
	return rc;
}
