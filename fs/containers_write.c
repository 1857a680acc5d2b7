/* SPDX-License-Identifier: MIT */
/*
 * The writes to a job's containers and reclaim files (their rows in
 * fs/tree_files.c).  What a write changes is the attachment registry's
 * (core/state/attach.h): its readers see it in the next view, the notifier
 * invalidates the status it shows in (fs/notify.c, after every write), and
 * the reclaimer hears of a process to watch or a job due through the
 * registry (accel_attach_wake_fd).  Nothing here calls back into the tree.
 */
#include "fs/containers_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/state/attach.h"
#include "core/model/health.h"
#include "core/model/log.h"
#include "core/engine/node.h"
#include "fs/accelfs.h"
#include "fs/attached.h"

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

/* The container id of a command, by the one rule (core/model/container_id.h): 0, or -EINVAL with why. */
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
	if (j->health.state == ACCEL_HEALTH_FAILED) {
		/* The driver says the partition cannot be trusted: no new container is started on it. */
		snprintf(why, whylen, "%s is failed (%s; recovery: %s): it cannot be given to container %.12s", j->name,
		         j->health.why, accel_health_action_name(j->health.action), arg[1]);
		return -EIO;
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
	/* The outcome of the last operation in the profile directory: a refusal says why, a success clears it. */
	accel_node_report(fs->node, n->dev->name, n->profile->name, n->via_node, ret ? why : "");
	if (!ret)
		fs_attached_gone(fs, n->job->name); /* a detach may have taken the job's last container */
	if (ret) {
		log_warn("%s", why);
		return ret;
	}
	return (int)size;
}

int fs_containers_write(struct fs_write *w, const struct fs_node *n)
{
	return write_command(w, n, "containers", containers_line);
}

int fs_reclaim_write(struct fs_write *w, const struct fs_node *n)
{
	return write_command(w, n, "reclaim", reclaim);
}
