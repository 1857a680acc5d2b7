/* SPDX-License-Identifier: MIT */
/*
 * The tables of `mig -lgip/-lgipp/-lgi/-lcip/-lci`, laid out column for
 * column as the vendor tools print them: nvidia-smi's as read on an H200
 * with driver 580 (tests/sim/data/), ppu-smi's from T-Head's PPU-SMI
 * manual.  Scripts parse these tables; the layout is the interface.
 */
#include <stdio.h>
#include <string.h>

#include "tools/smi.h"

void smi_print_rule(const struct smi *s, unsigned width)
{
	(void)s;
	putchar('+');
	for (unsigned i = 0; i < width - 2; i++)
		putchar('-');
	puts("+");
}

/* nvidia-smi draws the header rule with '|' and '=', ppu-smi with '+' and '='. */
static void header_rule(const struct smi *s, unsigned width)
{
	putchar(s->thead ? '+' : '|');
	for (unsigned i = 0; i < width - 2; i++)
		putchar('=');
	puts(s->thead ? "+" : "|");
}

static void memory_gib(unsigned long long mib, char *buf, size_t len)
{
	snprintf(buf, len, "%.2f", (double)mib / 1024.0);
}

void smi_print_lgip_header(const struct smi *s)
{
	smi_print_rule(s, SMI_W_LGIP(s));
	if (s->thead) {
		puts("| GPU instance profiles:                                                          |");
		puts("| PPU  Name                 Profile  Instances   Memory  P2P  CU      DEC   ENC   |");
		puts("|                             ID     Free/Total   GiB         CpyEng  JPEG  OFA   |");
	} else {
		puts("| GPU instance profiles:                                                        |");
		puts("| GPU   Name               ID    Instances   Memory     P2P    SM    DEC   ENC  |");
		puts("|                                Free/Total   GiB              CE    JPEG  OFA  |");
	}
	header_rule(s, SMI_W_LGIP(s));
}

void smi_print_lgip_row(const struct smi *s, unsigned dev, const struct smi_gi_profile *p, unsigned free_count)
{
	const mig_gpu_instance_profile_info_v3_t *i = &p->info;
	const char *p2p = i->capabilities & MIG_GPU_INSTANCE_PROFILE_CAPS_P2P ? "Yes" : "No";
	char mem[32];

	memory_gib(i->memorySizeMB, mem, sizeof(mem));
	if (s->thead) {
		printf("| %-5u%-21s%4u%9u/%-7u%-8s%-5s%-8u%-6u%-6u|\n", dev, p->name, i->id, free_count,
		       i->instanceCount, mem, p2p, i->multiprocessorCount, i->decoderCount, i->encoderCount);
		printf("|%61s%-8u%-6u%-6u|\n", "", i->copyEngineCount, i->jpegCount, i->ofaCount);
	} else {
		printf("|%4u  %-19s%3u%6u/%-9u%-11s%-7s%-7u%-6u%-4u|\n", dev, p->name, i->id, free_count,
		       i->instanceCount, mem, p2p, i->multiprocessorCount, i->decoderCount, i->encoderCount);
		printf("|%63s%-6u%-6u%-4u|\n", "", i->copyEngineCount, i->jpegCount, i->ofaCount);
	}
	smi_print_rule(s, SMI_W_LGIP(s));
}

void smi_print_lgipp_row(const struct smi *s, unsigned dev, const struct smi_gi_profile *p,
                         const mig_gpu_instance_placement_t *pl, unsigned n)
{
	char list[256];
	size_t off = 0;

	list[0] = '\0';
	for (unsigned k = 0; k < n && off < sizeof(list); k++)
		off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%u", k ? "," : "", pl[k].start);
	if (s->thead)
		printf("PPU %u profile ID %u placements: {%s}:%u\n", dev, p->info.id, list, n ? pl[0].size : 0);
	else
		printf("GPU %2u Profile ID %2u %s {%s}:%u\n", dev, p->info.id,
		       n == 1 ? "Placement :" : "Placements:", list, n ? pl[0].size : 0);
}

void smi_print_lgi_header(const struct smi *s)
{
	smi_print_rule(s, SMI_W_LGI(s));
	puts("| GPU instances:                                          |");
	if (s->thead) {
		puts("| PPU  Name                 Profile  Instance  Placement  |");
		puts("|                             ID        ID     Start:Size |");
	} else {
		puts("| GPU   Name               Profile  Instance   Placement  |");
		puts("|                            ID       ID       Start:Size |");
	}
	header_rule(s, SMI_W_LGI(s));
}

void smi_print_lgi_row(const struct smi *s, unsigned dev, const char *name, const mig_gpu_instance_info_t *gi)
{
	char placement[32];

	snprintf(placement, sizeof(placement), "%u:%u", gi->placement.start, gi->placement.size);
	if (s->thead)
		printf("| %-5u%-21s%4u%9u%12s     |\n", dev, name, gi->profileId, gi->id, placement);
	else
		printf("|%4u  %-21s%3u%9u%13s     |\n", dev, name, gi->profileId, gi->id, placement);
	smi_print_rule(s, SMI_W_LGI(s));
}

void smi_print_lcip_header(const struct smi *s)
{
	smi_print_rule(s, SMI_W_LCIP(s));
	puts("| Compute instance profiles:                                                           |");
	if (s->thead) {
		puts("| PPU    GPU     Name                 Profile  Instances   Exclusive       Shared      |");
		puts("|      Instance                         ID     Free/Total     CU       DEC   ENC  OFA  |");
		puts("|         ID                                                          CpyEng JPEG      |");
	} else {
		puts("| GPU     GPU       Name             Profile  Instances   Exclusive       Shared       |");
		puts("|       Instance                       ID     Free/Total     SM       DEC   ENC   OFA  |");
		puts("|         ID                                                          CE    JPEG       |");
	}
	header_rule(s, SMI_W_LCIP(s));
}

void smi_print_lcip_row(const struct smi *s, unsigned dev, unsigned gi, const char *name,
                        const struct smi_ci_profile *c, unsigned free_count)
{
	const mig_compute_instance_profile_info_v2_t *i = &c->info;
	char id[16], counts[32];

	snprintf(id, sizeof(id), "%u%s", i->id, c->whole ? "*" : "");
	if (s->thead) {
		printf("| %-8u%-7u%-21s%4s%9u/%-6u%6u%10u%5u%5u   |\n", dev, gi, name, id, free_count, i->instanceCount,
		       i->multiprocessorCount, i->sharedDecoderCount, i->sharedEncoderCount, i->sharedOfaCount);
		printf("|%73u%5u        |\n", i->sharedCopyEngineCount, i->sharedJpegCount);
	} else {
		snprintf(counts, sizeof(counts), "%u/%u", free_count, i->instanceCount);
		printf("|%4u%7u       %-21s%-7s%-14s%-10u%-6u%-6u%-4u|\n", dev, gi, name, id, counts,
		       i->multiprocessorCount, i->sharedDecoderCount, i->sharedEncoderCount, i->sharedOfaCount);
		printf("|%70s%-6u%-10u|\n", "", i->sharedCopyEngineCount, i->sharedJpegCount);
	}
	smi_print_rule(s, SMI_W_LCIP(s));
}

void smi_print_lci_header(const struct smi *s)
{
	smi_print_rule(s, SMI_W_LCI(s));
	if (s->thead) {
		puts("| Compute instances:                                                |");
		puts("| PPU    GPU     Name                 Profile  Instance  Placement  |");
		puts("|      Instance                         ID        ID     Start:Size |");
		puts("|         ID                                                        |");
	} else {
		puts("| Compute instances:                                                 |");
		puts("| GPU     GPU       Name             Profile   Instance   Placement  |");
		puts("|       Instance                       ID        ID       Start:Size |");
		puts("|         ID                                                         |");
	}
	header_rule(s, SMI_W_LCI(s));
}

void smi_print_lci_row(const struct smi *s, unsigned dev, unsigned gi, const char *name,
                       const mig_compute_instance_info_t *ci)
{
	char placement[32];

	snprintf(placement, sizeof(placement), "%u:%u", ci->placement.start, ci->placement.size);
	if (s->thead)
		printf("| %-8u%-7u%-21s%4u%9u%12s     |\n", dev, gi, name, ci->profileId, ci->id, placement);
	else
		printf("|%4u%7u       %-21s%-10u%-11u%-8s|\n", dev, gi, name, ci->profileId, ci->id, placement);
	smi_print_rule(s, SMI_W_LCI(s));
}
