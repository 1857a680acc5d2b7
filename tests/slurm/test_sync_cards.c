/* SPDX-License-Identifier: MIT */
/*
 * What accelfs-slurm-sync reads of node.json (slurm/sync_cards.h): a card that
 * takes no job counts nothing and is named in the node's comment, from
 * admits where node.json has it, the older health and cordon files where not.
 * The node.json here is written by hand in the format docs/tree.md gives; the
 * slurm suite reads the real daemon's.
 */
#include "sync_cards.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[64];

static void put(const char *rel, const char *text)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sync-cards-XXXXXX");
	assert_non_null(mkdtemp(dir));
	char path[256];
	snprintf(path, sizeof(path), "%s/gpu0", dir);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/gpu0/mig", dir);
	mkdir(path, 0755);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd);
}

static long avail(const struct node_cards *c, const char *profile)
{
	for (size_t i = 0; i < c->navail; i++)
		if (!strcmp(c->avail[i].profile, profile))
			return c->avail[i].available;
	return -1;
}

#define MIG "\"mig\":{\"profiles\":[{\"name\":\"4g.48gb\"},{\"name\":\"1g.18gb\"}]}"

static void admits_decide(void **state)
{
	(void)state;
	struct node_cards c;
	char err[256], comment[1024];
	/* ppu0 takes jobs; gpu0 is cordoned (its available still says 7: an accelfs could lag). */
	put("node.json", "{\"devices\":["
	                 "{\"name\":\"ppu0\",\"state\":\"ok\",\"health\":{\"state\":\"ok\"},"
	                 "\"admits\":{\"new_jobs\":true,\"condition\":\"ok\",\"why\":null},"
	                 "\"profiles\":[{\"name\":\"4g.48gb\",\"available\":2}]},"
	                 "{\"name\":\"gpu0\",\"state\":\"ok\",\"health\":{\"state\":\"ok\"},"
	                 "\"admits\":{\"new_jobs\":false,\"condition\":\"cordoned\",\"why\":\"gpu0 is cordoned\"},"
	                 "\"profiles\":[{\"name\":\"1g.18gb\",\"available\":7}]}]," MIG "}");
	assert_int_equal(cards_read(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(avail(&c, "4g.48gb"), 2);
	assert_int_equal(avail(&c, "1g.18gb"), 0); /* listed, and nothing */
	cards_comment(&c, comment, sizeof(comment));
	assert_string_equal(comment, "accelfs: gpu0 cordoned (gpu0 is cordoned)");
}

static void degraded_still_takes_jobs(void **state)
{
	(void)state;
	struct node_cards c;
	char err[256], comment[1024];
	put("node.json", "{\"devices\":[{\"name\":\"gpu0\",\"state\":\"ok\",\"health\":{\"state\":\"degraded\"},"
	                 "\"admits\":{\"new_jobs\":true,\"condition\":\"degraded\",\"why\":\"Xid 13\"},"
	                 "\"profiles\":[{\"name\":\"1g.18gb\",\"available\":3}]}]," MIG "}");
	assert_int_equal(cards_read(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(avail(&c, "1g.18gb"), 3);
	cards_comment(&c, comment, sizeof(comment));
	assert_string_equal(comment, "");
}

static void without_admits_health_and_cordon_decide(void **state)
{
	(void)state;
	struct node_cards c;
	char err[256], comment[1024];
#define DOC(health)                                                                                                    \
	"{\"devices\":[{\"name\":\"gpu0\",\"state\":\"ok\",\"health\":{\"state\":\"" health "\",\"why\":\"Xid "        \
	"79\"},\"profiles\":[{\"name\":\"1g.18gb\",\"available\":7}]}]," MIG "}"
	put("node.json", DOC("failed"));
	put("gpu0/mig/cordon", "0\n");
	assert_int_equal(cards_read(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(avail(&c, "1g.18gb"), 0);
	cards_comment(&c, comment, sizeof(comment));
	assert_string_equal(comment, "accelfs: gpu0 failed (Xid 79)");

	put("node.json", DOC("ok"));
	assert_int_equal(cards_read(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(avail(&c, "1g.18gb"), 7);
	put("gpu0/mig/cordon", "1\n");
	assert_int_equal(cards_read(dir, &c, err, sizeof(err)), 0);
	assert_int_equal(avail(&c, "1g.18gb"), 0);
	cards_comment(&c, comment, sizeof(comment));
	assert_string_equal(comment, "accelfs: gpu0 cordoned");
}

static void a_long_comment_is_cut(void **state)
{
	(void)state;
	struct node_cards c;
	char comment[32];
	memset(&c, 0, sizeof(c));
	c.nclosed = 2;
	snprintf(c.closed[0].name, sizeof(c.closed[0].name), "gpu0");
	snprintf(c.closed[0].condition, sizeof(c.closed[0].condition), "failed");
	snprintf(c.closed[0].why, sizeof(c.closed[0].why), "a sentence far longer than the room left for it");
	snprintf(c.closed[1].name, sizeof(c.closed[1].name), "gpu1");
	snprintf(c.closed[1].condition, sizeof(c.closed[1].condition), "cordoned");
	cards_comment(&c, comment, sizeof(comment));
	assert_int_equal(strlen(comment), sizeof(comment) - 1);
	assert_memory_equal(comment, "accelfs: gpu0 failed (a sentenc", sizeof(comment) - 1);
}

static void no_node_json_is_an_error(void **state)
{
	(void)state;
	struct node_cards c;
	char err[256];
	char path[256];
	snprintf(path, sizeof(path), "%s/node.json", dir);
	unlink(path);
	assert_int_equal(cards_read(dir, &c, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "node.json"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(admits_decide, setup, teardown),
		cmocka_unit_test_setup_teardown(degraded_still_takes_jobs, setup, teardown),
		cmocka_unit_test_setup_teardown(without_admits_health_and_cordon_decide, setup, teardown),
		cmocka_unit_test(a_long_comment_is_cut),
		cmocka_unit_test_setup_teardown(no_node_json_is_an_error, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
