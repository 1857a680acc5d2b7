/* SPDX-License-Identifier: MIT */
#include "core/driver/proc_view.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/driver/mountinfo.h"

#define CAP_SYS_PTRACE_BIT 19 /* linux/capability.h's CAP_SYS_PTRACE */

void accel_proc_owner_read(const char *proc_root, const char *pid, struct accel_proc_owner *out)
{
	char path[PATH_MAX], line[256];
	bool uids = false, gids = false;
	struct stat st;
	FILE *f;

	memset(out, 0, sizeof(*out));
	snprintf(path, sizeof(path), "%s/%s/status", proc_root, pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && !(uids && gids)) {
		unsigned a, b, c;

		if (sscanf(line, "Uid: %u %u %u", &a, &b, &c) == 3) {
			out->uid[0] = a, out->uid[1] = b, out->uid[2] = c;
			uids = true;
		} else if (sscanf(line, "Gid: %u %u %u", &a, &b, &c) == 3) {
			out->gid[0] = a, out->gid[1] = b, out->gid[2] = c;
			gids = true;
		}
	}
	fclose(f);
	/*
	 * The kernel gives a non-dumpable process's private files to root
	 * (task_dump_owner): fd/ is one, its owner says whether the process's
	 * own user may look inside it.
	 */
	snprintf(path, sizeof(path), "%s/%s/fd", proc_root, pid);
	if (!uids || !gids || stat(path, &st))
		return;
	out->dumpable = st.st_uid == out->uid[1] && st.st_gid == out->gid[1];
	out->known = true;
}

void accel_proc_hiding_parse(const char *options, struct accel_proc_hiding *out)
{
	char buf[256], *save = NULL;

	memset(out, 0, sizeof(*out));
	snprintf(buf, sizeof(buf), "%s", options);
	for (char *opt = strtok_r(buf, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		if (!strncmp(opt, "hidepid=", 8)) {
			const char *v = opt + 8;
			/* 0 and "off" hide nothing; 1 (noaccess), 2 (invisible), 4 (ptraceable) hide what is not the reader's. */
			out->hides = strcmp(v, "0") && strcmp(v, "off");
		} else if (!strncmp(opt, "gid=", 4)) {
			char *end;
			unsigned long g = strtoul(opt + 4, &end, 10);

			out->has_gid = opt[4] && !*end;
			out->gid = (gid_t)g;
		}
	}
}

void accel_proc_hiding_read(const char *proc_root, struct accel_proc_hiding *out)
{
	struct accel_mount_entry m;

	if (!accel_mount_at(proc_root, &m) || strcmp(m.type, "proc")) {
		memset(out, 0, sizeof(*out));
		out->hides = true; /* cannot tell: show less, never more */
		return;
	}
	accel_proc_hiding_parse(m.options, out);
}

void accel_proc_gate_of(const struct accel_proc_hiding *h, const struct accel_viewer *v, struct accel_proc_gate *out)
{
	memset(out, 0, sizeof(*out));
	out->all = !h->hides;
	if (!v)
		return;
	out->someone = true;
	out->uid = v->uid;
	out->gid = v->gid;
	if (v->ptrace)
		out->all = true;
	if (h->has_gid) {
		bool member = v->gid == h->gid;

		for (size_t i = 0; i < v->n_groups && !member; i++)
			member = v->groups[i] == h->gid;
		out->all = out->all || member;
	}
}

void accel_proc_gate_for(const char *proc_root, const struct accel_viewer *v, struct accel_proc_gate *out)
{
	struct accel_proc_hiding h;

	accel_proc_hiding_read(proc_root, &h);
	accel_proc_gate_of(&h, v, out);
}

bool accel_proc_gate_lets(const struct accel_proc_gate *g, const struct accel_proc_owner *o)
{
	if (g->all)
		return true;
	if (!g->someone || !o->known || !o->dumpable)
		return false;
	for (int i = 0; i < 3; i++)
		if (o->uid[i] != g->uid || o->gid[i] != g->gid)
			return false;
	return true;
}

bool accel_proc_has_ptrace(const char *proc_root, pid_t tid)
{
	char path[PATH_MAX], line[256];
	unsigned long long caps = 0;
	bool found = false;
	FILE *f;

	if (tid <= 0)
		return false;
	snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &caps) == 1;
	fclose(f);
	return found && (caps >> CAP_SYS_PTRACE_BIT & 1);
}
