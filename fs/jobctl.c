/* SPDX-License-Identifier: MIT */
#include "fs/jobctl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/metrics.h"
#include "core/node.h"
#include "fs/accelfs.h"
#include "fs/attached.h"
#include "fs/reclaimer.h"
#include "fs/text.h"

int fs_jobctl_check_name(struct accelfs *fs, const char *device, const char *profile, const char *job)
{
	char why[ACCEL_TEXT_MAX];
	int ret = accel_job_name_check(job);

	if (!ret)
		return 0;
	if (ret == -ENAMETOOLONG)
		snprintf(why, sizeof(why),
		         "job name '%.64s...' is longer than %d bytes: a job name is " ACCEL_JOB_NAME_RULE, job,
		         ACCEL_JOB_NAME_MAX);
	else
		snprintf(why, sizeof(why), "job name '%s' is not valid: a job name is " ACCEL_JOB_NAME_RULE, job);
	fs_attached_report(fs, device, profile, false, why);
	/* Refused before core is asked, but a refused carve all the same: counted and logged as core's. */
	accel_metrics_carve(ret, 0);
	log_notice("%s/%s: mkdir %.64s: %s", device[0] ? device : "mig", profile, job, why);
	return ret;
}

/* ---- writes --------------------------------------------------------------- */

#define CONTAINERS_SYNTAX                                                                                              \
	"containers: write 'attach ID PID [MIG-UUID]' or 'detach ID [MIG-UUID]', one command per write"

/* Is the job still there, the same instance, ready?  Asked again after an attach took effect. */
static bool still_ready(struct accelfs *fs, const char *job, const char *uuid)
{
	struct accel_snapshot *s = accel_node_snapshot(fs->node);
	const struct accel_job *j = accel_snapshot_job(s, job, NULL);
	bool ok = j && j->state == ACCEL_JOB_READY && !strcmp(j->uuid, uuid);

	accel_snapshot_unref(s);
	return ok;
}

/* The container id of a command, by the one rule (core/container_id.h): 0, or -EINVAL with why. */
static int check_id(const char *id, char *why, size_t whylen)
{
	char quoted[48];

	if (!id[0])
		snprintf(why, whylen, "containers: the container id is empty: " CONTAINERS_SYNTAX);
	else if (!accel_container_id_valid(id))
		snprintf(why, whylen, "containers: '%s' is not a container id (" ACCEL_CONTAINER_ID_RULE ")",
		         accel_word_quote(id, strlen(id), quoted, sizeof(quoted)));
	else
		return 0;
	return -EINVAL;
}

/* The MIG UUID of a command, if given (NULL: none): 0, or -EINVAL with why. */
static int check_uuid(const char *uuid, char *why, size_t whylen)
{
	char quoted[48];

	if (!uuid || accel_mig_uuid_ok(uuid, strlen(uuid)))
		return 0;
	snprintf(why, whylen, "containers: '%s' is not a MIG UUID: " CONTAINERS_SYNTAX,
	         accel_word_quote(uuid, strlen(uuid), quoted, sizeof(quoted)));
	return -EINVAL;
}

static int attach(struct accelfs *fs, const struct accel_job *j, char **arg, int n, char *why, size_t whylen)
{
	char *end;
	long pid;
	int ret;

	if (n != 3 && n != 4) {
		snprintf(why, whylen, CONTAINERS_SYNTAX);
		return -EINVAL;
	}
	ret = check_id(arg[1], why, whylen);
	if (!ret)
		ret = check_uuid(n == 4 ? arg[3] : NULL, why, whylen);
	if (ret)
		return ret;
	errno = 0;
	pid = strtol(arg[2], &end, 10);
	if (errno || end == arg[2] || *end || pid <= 0 || pid > 4194304) {
		char quoted[48];
		snprintf(why, whylen, "containers: '%s' is not a process id",
		         accel_word_quote(arg[2], strlen(arg[2]), quoted, sizeof(quoted)));
		return -EINVAL;
	}
	if (j->state == ACCEL_JOB_REMOVING) {
		/* An rmdir runs, or one the driver stopped midway waits to be resumed: either way it is going. */
		snprintf(why, whylen,
		         "%s is being removed (%s): it cannot be given to container %.12s; rmdir %s finishes the "
		         "removal, then mkdir makes a new one",
		         j->name, j->state_reason[0] ? j->state_reason : "rmdir in progress", arg[1], j->name);
		return -EBUSY;
	}
	if (j->state != ACCEL_JOB_READY) {
		snprintf(why, whylen, "%s is %s (%s): it cannot be given to container %.12s", j->name,
		         accel_job_state_str(j->state), j->state_reason, arg[1]);
		return -ENODEV;
	}
	if (n == 4 && strcmp(arg[3], j->uuid)) {
		snprintf(why, whylen,
		         "%s is now instance %s, not %s: container %.12s was given an earlier job of that name, "
		         "removed since",
		         j->name, j->uuid, arg[3], arg[1]);
		return -ESTALE;
	}
	ret = accel_attach_add(fs->mount.attach, j->name, j->uuid, arg[1], (pid_t)pid, why, whylen);
	if (ret)
		return ret;
	/*
	 * The job was looked up before the attachment existed; an rmdir that
	 * began after that lookup has finished by now or sees the attachment.
	 * Look again, so that a container never keeps a job that was removed.
	 */
	if (!still_ready(fs, j->name, j->uuid)) {
		bool due;
		accel_attach_remove(fs->mount.attach, j->name, j->uuid, arg[1], &due);
		snprintf(why, whylen, "%s was removed: it cannot be given to container %.12s", j->name, arg[1]);
		return -ENOENT;
	}
	log_info("%s: given to container %.12s (pid %ld)", j->name, arg[1], pid);
	fs_reclaimer_kick(); /* its process's pidfd joins what the reclaimer waits on */
	return 0;
}

static int detach(struct accelfs *fs, const struct accel_job *j, char **arg, int n, char *why, size_t whylen)
{
	bool due;
	int ret;

	if (n != 2 && n != 3) {
		snprintf(why, whylen, CONTAINERS_SYNTAX);
		return -EINVAL;
	}
	ret = check_id(arg[1], why, whylen);
	if (!ret)
		ret = check_uuid(n == 3 ? arg[2] : NULL, why, whylen);
	if (ret)
		return ret;
	/* Without a UUID, the job whose file this is: the instance, not whatever has its name later. */
	ret = accel_attach_remove(fs->mount.attach, j->name, n == 3 ? arg[2] : j->uuid, arg[1], &due);
	if (ret) {
		snprintf(why, whylen, "cannot record that container %.12s left %s: %s", arg[1], j->name,
		         strerror(-ret));
		return ret;
	}
	log_info("%s: container %.12s is gone", j->name, arg[1]);
	if (due)
		fs_reclaimer_kick();
	return 0;
}

/*
 * One command: its words, separated by one space or tab each.  An empty
 * word stays one (two spaces where a container id should be are an empty
 * id, said so), so that what a hook wrote is read as it meant it or not
 * at all.
 */
static int containers_line(struct accelfs *fs, const struct accel_job *j, char *line, char *why, size_t whylen)
{
	char *arg[5];
	int n = 0;

	if (!line[0])
		return 0;
	for (char *t = line;;) {
		if (n == 5) {
			snprintf(why, whylen, CONTAINERS_SYNTAX);
			return -EINVAL;
		}
		arg[n++] = t;
		t += strcspn(t, " \t");
		if (!*t)
			break;
		*t++ = '\0';
	}
	if (!strcmp(arg[0], "attach"))
		return attach(fs, j, arg, n, why, whylen);
	if (!strcmp(arg[0], "detach"))
		return detach(fs, j, arg, n, why, whylen);
	snprintf(why, whylen, CONTAINERS_SYNTAX);
	return -EINVAL;
}

static int reclaim(struct accelfs *fs, const struct accel_job *j, char *text, char *why, size_t whylen)
{
	enum accel_reclaim r;
	char quoted[36];
	bool due;
	int ret;

	text[strcspn(text, " \t")] = '\0';
	if (accel_reclaim_parse(text, &r)) {
		snprintf(why, whylen,
		         "reclaim: write 'manual' or 'when-detached' (reclaim the job once its last "
		         "container is gone), not '%s'",
		         accel_word_quote(text, strlen(text), quoted, sizeof(quoted)));
		return -EINVAL;
	}
	ret = accel_attach_set_reclaim(fs->mount.attach, j->name, j->uuid, r, &due);
	if (ret) {
		snprintf(why, whylen, "cannot record the reclaim policy of %s: %s", j->name, strerror(-ret));
		return ret;
	}
	log_info("%s: reclaim %s", j->name, accel_reclaim_str(r));
	if (due)
		fs_reclaimer_kick();
	return 0;
}

/* A command written to file of job n: what the file's own parser (line) makes of it. */
typedef int (*command_fn)(struct accelfs *fs, const struct accel_job *j, char *text, char *why, size_t whylen);

static int write_command(struct fs_write *w, const struct fs_node *n, const char *file, command_fn line)
{
	struct accelfs *fs = w->fs;
	const char *buf = w->buf;
	size_t size = w->size;
	char text[1024], why[ACCEL_TEXT_MAX] = "";
	int ret = 0;

	if (!fs->mount.attach) {
		snprintf(why, sizeof(why), "%s: the attachment registry is not open", file);
		ret = -ENODEV;
	} else if (w->uid != 0) {
		/* The hooks run as root, in the runtime; anyone else could pin or free a job they do not hold. */
		snprintf(why, sizeof(why), "%s of %s: only root may write it (the runtime's OCI hooks do)", file,
		         n->job->name);
		ret = -EPERM;
	} else if (size >= sizeof(text)) {
		snprintf(why, sizeof(why), "%s: write one command of at most %zu bytes", file, sizeof(text) - 1);
		ret = -EINVAL;
	} else if (memchr(buf, '\0', size) || (size > 1 && memchr(buf, '\n', size - 1))) {
		/* A second line is a second command nobody checked: a container id must not smuggle one in. */
		snprintf(why, sizeof(why), "%s: one command per write, on one line (no newline or NUL inside it)",
		         file);
		ret = -EINVAL;
	}
	if (!ret) {
		memcpy(text, buf, size);
		text[size] = '\0';
		if (size && text[size - 1] == '\n')
			text[size - 1] = '\0';
		ret = line(fs, n->job, text, why, sizeof(why));
	}
	if (fs->mount.attach)
		fs_attached_changed(fs, n->job->name);
	if (ret) {
		fs_attached_report(fs, n->dev->name, n->profile->name, n->via_node, why);
		log_warn("%s", why);
		return ret;
	}
	return (int)size;
}

int fs_jobctl_containers_write(struct fs_write *w, const struct fs_node *n)
{
	return write_command(w, n, "containers", containers_line);
}

int fs_jobctl_reclaim_write(struct fs_write *w, const struct fs_node *n)
{
	return write_command(w, n, "reclaim", reclaim);
}

/* ---- text ------------------------------------------------------------------- */

static void when(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;

	buf[0] = '\0';
	if (gmtime_r(&tt, &tm))
		strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* One line per container attached (reg: the registry, NULL: none): lead, the id, its pid and since when. */
static void put_containers(struct fs_text *t, struct accel_attach *reg, const struct accel_job *j, const char *lead)
{
	struct accel_attachment *c;
	size_t n;
	char since[32];

	if (!reg || accel_attach_list(reg, j->name, j->uuid, &c, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		when(c[i].since, since, sizeof(since));
		fs_put(t, "%s%s pid=%d since=%s\n", lead, c[i].id, (int)c[i].pid, since);
	}
	free(c);
}

/* The job's own nodes: its capability nodes; the card and control nodes are shared with other jobs. */
static void put_processes(struct fs_text *t, const struct accel_device *d, const struct accel_job *j)
{
	struct accel_devnode *own = calloc(j->n_nodes ? j->n_nodes : 1, sizeof(*own));
	struct accel_holder *h = NULL;
	size_t n_own = 0, n = 0;

	if (!own) {
		t->oom = true;
		return;
	}
	for (size_t i = 0; i < j->n_nodes; i++) {
		bool shared = false;
		for (size_t k = 0; k < d->n_card_nodes && !shared; k++)
			shared = !strcmp(d->card_nodes[k].path, j->nodes[i].path);
		if (!shared)
			own[n_own++] = j->nodes[i];
	}
	if (!accel_device_nodes_holders(own, n_own, &h, &n))
		for (size_t i = 0; i < n; i++)
			fs_put(t, "pid=%d command=%s fds=%u cmdline=%s\n", (int)h[i].pid, h[i].comm, h[i].nfds,
			       h[i].cmdline);
	free(h);
	free(own);
}

int fs_jobctl_holders_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                           const struct fs_node *n)
{
	(void)node;
	(void)s;
	put_processes(t, n->dev, n->job);
	put_containers(t, n->mount->attach, n->job, "container=");
	return 0;
}

int fs_jobctl_containers_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                              const struct fs_node *n)
{
	(void)node;
	(void)s;
	put_containers(t, n->mount->attach, n->job, "id=");
	return 0;
}

int fs_jobctl_reclaim_text(struct fs_text *t, struct accel_node *node, const struct accel_snapshot *s,
                           const struct fs_node *n)
{
	struct accel_attach *reg = n->mount->attach;

	(void)node;
	(void)s;
	fs_put(t, "%s\n",
	       accel_reclaim_str(reg ? accel_attach_reclaim(reg, n->job->name, n->job->uuid) : ACCEL_RECLAIM_MANUAL));
	return 0;
}

void fs_jobctl_status_lines(struct fs_text *t, struct accel_attach *reg, const struct accel_job *j)
{
	if (!reg)
		return;
	fs_put(t, "reclaim: %s\n", accel_reclaim_str(accel_attach_reclaim(reg, j->name, j->uuid)));
	put_containers(t, reg, j, "container: ");
}
