#include <stdio.h>
#include <string.h>

#include "ctldir.h"
#include "ctlschema.h"

#define ESV_CTL_ENTRY(id, name, type)	[id] = { name, type },
const struct ctl_key ctl_job_keys[JK_COUNT] = { ESV_JOB_KEYS(ESV_CTL_ENTRY) };
const struct ctl_key ctl_worker_keys[WK_COUNT] = {
	ESV_WORKER_KEYS(ESV_CTL_ENTRY)
};
const struct ctl_key ctl_store_keys[SK_COUNT] = {
	ESV_STORE_KEYS(ESV_CTL_ENTRY)
};
#undef ESV_CTL_ENTRY

const char *const ctl_group_states[] = { ESV_GS_DOWN, ESV_GS_JOINING,
	ESV_GS_RUNNING, ESV_GS_STOPPING, ESV_GS_BACKOFF, ESV_GS_FINISHING,
	ESV_GS_SUCCEEDED, ESV_GS_FAILED, NULL };
const char *const ctl_worker_states[] = { ESV_WS_STARTING, ESV_WS_RUNNING,
	ESV_WS_SUCCEEDED, ESV_WS_FAILED, ESV_WS_STOPPED, NULL };

static const struct ctl_key *
lookup(const struct ctl_key *keys, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

const struct ctl_key *
ctl_job_lookup(const char *name)
{
	return lookup(ctl_job_keys, JK_COUNT, name);
}

const struct ctl_key *
ctl_worker_lookup(const char *name)
{
	return lookup(ctl_worker_keys, WK_COUNT, name);
}

const struct ctl_key *
ctl_store_lookup(const char *name)
{
	return lookup(ctl_store_keys, SK_COUNT, name);
}

int
ctl_error_path(char *buf, size_t len, const char *attempt_dir,
    unsigned local_rank)
{
	int n;

	if (attempt_dir != NULL)
		n = snprintf(buf, len, "%s/%u/%s", attempt_dir, local_rank,
		    ESV_ERROR_FILE);
	else
		n = snprintf(buf, len, "%u/%s", local_rank, ESV_ERROR_FILE);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
