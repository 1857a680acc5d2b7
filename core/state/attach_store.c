/* SPDX-License-Identifier: MIT */
/*
 * <state-dir>/attachments.json, and the words in it:
 *
 *   { "job1": { "uuid": "MIG-...", "reclaim": "when-detached", "armed": true,
 *               "containers": [ { "id": "3f2a...", "pid": 4242, "start": 123456, "since": 1764500000 } ] } }
 */
#include "core/state/attach_store.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/fileio.h"
#include "core/model/log.h"

const char *accel_reclaim_str(enum accel_reclaim r)
{
	return r == ACCEL_RECLAIM_WHEN_DETACHED ? "when-detached" : "manual";
}

int accel_reclaim_parse(const char *text, enum accel_reclaim *out)
{
	if (!strcmp(text, "manual"))
		*out = ACCEL_RECLAIM_MANUAL;
	else if (!strcmp(text, "when-detached"))
		*out = ACCEL_RECLAIM_WHEN_DETACHED;
	else
		return -EINVAL;
	return 0;
}

bool accel_container_id_valid(const char *id)
{
	return accel_container_id_ok(id, strlen(id));
}

/* ---- the file --------------------------------------------------------------- */

void attach_store_init(struct attach_store *s, const char *state_dir)
{
	snprintf(s->path, sizeof(s->path), "%s/attachments.json", state_dir);
	pthread_mutex_init(&s->lock, NULL);
}

void attach_store_fini(struct attach_store *s)
{
	free(s->saved_text);
	s->saved_text = NULL;
	pthread_mutex_destroy(&s->lock);
}

static json_t *to_json(const struct attach_entry *entries, size_t n)
{
	json_t *root = json_object();

	for (size_t i = 0; root && i < n; i++) {
		const struct attach_entry *e = &entries[i];
		json_t *list;

		if (attach_entry_idle(e))
			continue; /* says nothing the file must keep: and nothing is allocated for it */
		list = json_array();
		for (size_t k = 0; list && k < e->n; k++)
			json_array_append_new(list, json_pack("{s:s, s:i, s:I, s:I}", "id", e->c[k].id, "pid",
			                                      (int)e->c[k].pid, "start", (json_int_t)e->c[k].start,
			                                      "since", (json_int_t)e->c[k].since));
		json_object_set_new(root, e->job,
		                    json_pack("{s:s, s:s, s:b, s:o*}", "uuid", e->uuid, "reclaim",
		                              accel_reclaim_str(e->reclaim), "armed", e->armed, "containers", list));
	}
	return root;
}

int attach_store_text(struct attach_store *s, const struct attach_entry *e, size_t n, char **text, uint64_t *seq)
{
	json_t *root;

	*text = NULL;
	if (s->read_only)
		return -EROFS;
	root = to_json(e, n);
	*text = root ? json_dumps(root, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
	json_decref(root);
	if (!*text)
		return -ENOMEM;
	*seq = ++s->saves;
	return 0;
}

int attach_store_write(struct attach_store *s, char *text, uint64_t seq, bool durable)
{
	int ret;

	pthread_mutex_lock(&s->lock);
	if (seq < s->saved) {
		/* A later save is in the file, and says what this one did and more: it is what must last. */
		free(text);
		ret = durable ? accel_durable_write(s->path, s->saved_text, strlen(s->saved_text), 0644) : 0;
	} else {
		ret = durable ? accel_durable_write(s->path, text, strlen(text), 0644)
		              : accel_atomic_write(s->path, text, strlen(text), 0644);
		if (!ret) {
			free(s->saved_text);
			s->saved_text = text;
			s->saved = seq;
		} else {
			free(text);
		}
	}
	pthread_mutex_unlock(&s->lock);
	if (ret)
		log_warn("cannot write %s: %s (what containers hold is in memory; the next change writes it again)",
		         s->path, strerror(-ret));
	return ret;
}

int attach_store_save(struct attach_store *s, const struct attach_entry *e, size_t n, bool durable)
{
	uint64_t seq;
	char *text;
	int ret = attach_store_text(s, e, n, &text, &seq);

	return ret ? ret : attach_store_write(s, text, seq, durable);
}

static const char *load_entry(struct attach_entry **entries, size_t *n, const char *job, json_t *o)
{
	json_t *list = json_object_get(o, "containers"), *c;
	const char *uuid = json_string_value(json_object_get(o, "uuid"));
	const char *reclaim = json_string_value(json_object_get(o, "reclaim"));
	struct attach_entry *e, *more;
	size_t i;

	if (!json_is_object(o) || !uuid || !reclaim || !json_is_boolean(json_object_get(o, "armed")) ||
	    !json_is_array(list))
		return "an entry lacks uuid, reclaim, armed or containers";
	if (accel_job_name_check(job) == -ENAMETOOLONG || !job[0])
		return "an entry's job name is not a job name";
	/* Keys are unique (JSON_REJECT_DUPLICATES): each is a new entry. */
	more = realloc(*entries, (*n + 1) * sizeof(*more));
	if (!more)
		return "out of memory";
	*entries = more;
	e = &more[(*n)++];
	memset(e, 0, sizeof(*e));
	snprintf(e->job, sizeof(e->job), "%s", job);
	snprintf(e->uuid, sizeof(e->uuid), "%s", uuid);
	if (accel_reclaim_parse(reclaim, &e->reclaim))
		return "an entry's reclaim is neither manual nor when-detached";
	e->armed = json_is_true(json_object_get(o, "armed"));
	json_array_foreach(list, i, c)
	{
		const char *id = json_string_value(json_object_get(c, "id"));
		json_t *pid = json_object_get(c, "pid"), *start = json_object_get(c, "start");
		json_t *since = json_object_get(c, "since");
		struct accel_attachment *grown;

		if (!id || !accel_container_id_valid(id) || !json_is_integer(pid) || !json_is_integer(start) ||
		    !json_is_integer(since))
			return "a container lacks a valid id, pid, start or since";
		grown = realloc(e->c, (e->n + 1) * sizeof(*grown));
		if (!grown)
			return "out of memory";
		e->c = grown;
		memset(&e->c[e->n], 0, sizeof(e->c[0]));
		snprintf(e->c[e->n].id, sizeof(e->c[0].id), "%s", id);
		e->c[e->n].pid = (pid_t)json_integer_value(pid);
		e->c[e->n].start = (unsigned long long)json_integer_value(start);
		e->c[e->n].since = json_integer_value(since);
		e->n++;
	}
	return NULL;
}

int attach_store_load(struct attach_store *s, struct attach_entry **e, size_t *n, char *err, size_t errlen)
{
	json_error_t jerr;
	const char *bad = NULL, *job;
	json_t *root, *o;

	root = json_load_file(s->path, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		FILE *f = fopen(s->path, "re");
		if (!f)
			return 0; /* nothing was ever attached */
		fclose(f);
		snprintf(err, errlen,
		         "%s is unreadable (%s, line %d): it says which jobs containers hold; fix it, or remove it "
		         "once no container holds a job",
		         s->path, jerr.text, jerr.line);
		return -EINVAL;
	}
	if (!json_is_object(root))
		bad = "it is not a JSON object";
	json_object_foreach(root, job, o)
	{
		if (bad)
			break;
		bad = load_entry(e, n, job, o);
	}
	json_decref(root);
	if (bad) {
		snprintf(err, errlen,
		         "%s is not an attachment record (%s): fix it, or remove it once no container holds a job",
		         s->path, bad);
		return -EINVAL;
	}
	return 0;
}
