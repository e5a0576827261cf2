// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * TAP output and data checks shared by the userspace tests (tap.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"

const char *tap_case;

static int tap_tests, tap_failed;
static char details[8192];	/* printed as "# " lines by a failing check */
static size_t details_len;

void detail(const char *fmt, ...)
{
	size_t room = sizeof(details) - details_len;
	va_list ap;
	int n;

	if (room < 3)
		return;
	va_start(ap, fmt);
	n = vsnprintf(details + details_len, room - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	details_len += (size_t)n < room - 2 ? (size_t)n : room - 2;
	details[details_len++] = '\n';
	details[details_len] = '\0';
}

void clear_details(void)
{
	details_len = 0;
	details[0] = '\0';
}

bool ok(bool cond, const char *fmt, ...)
{
	const char *line = details;
	va_list ap;

	tap_tests++;
	if (!cond)
		tap_failed++;
	printf("%s %d - ", cond ? "ok" : "not ok", tap_tests);
	if (tap_case)
		printf("%s: ", tap_case);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	while (!cond && *line) {
		const char *end = strchr(line, '\n');
		int len = end ? (int)(end - line) : (int)strlen(line);

		printf("# %.*s\n", len, line);
		line += len + (end ? 1 : 0);
	}
	clear_details();
	fflush(stdout);
	return cond;
}

int tap_done(void)
{
	printf("1..%d\n", tap_tests);
	return tap_failed ? 1 : 0;
}

long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

void pattern(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;
	size_t i;

	for (i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

bool same(const uint8_t *got, const uint8_t *want, size_t n, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (got[i] != want[i]) {
			detail("%s: byte %zu of %zu is 0x%02x, want 0x%02x",
			       what, i, n, got[i], want[i]);
			return false;
		}
	}
	return true;
}

bool all_bytes(const uint8_t *p, size_t n, uint8_t v, const char *what)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (p[i] != v) {
			detail("%s: byte %zu is 0x%02x, want 0x%02x untouched",
			       what, i, p[i], v);
			return false;
		}
	}
	return true;
}

void detail_wc(const char *what, const struct ibv_wc *wc)
{
	detail("%s: got wr_id 0x%llx status %s (%d) opcode %d byte_len %u qp_num 0x%x src_qp 0x%x wc_flags 0x%x imm_data 0x%08x vendor_err 0x%x",
	       what, (unsigned long long)wc->wr_id,
	       ibv_wc_status_str(wc->status), wc->status, wc->opcode,
	       wc->byte_len, wc->qp_num, wc->src_qp, wc->wc_flags,
	       ntohl(wc->imm_data), wc->vendor_err);
}

/* The index of the RoCE v2 GID of @addr (IPv4 or IPv6) on @dev, or -1. */
int find_gid(const char *dev, const char *addr, union ibv_gid *gid)
{
	struct in6_addr want;
	struct in_addr v4;
	char path[256], line[128];
	int i;

	if (inet_pton(AF_INET, addr, &v4) == 1) {
		memset(&want, 0, sizeof(want));
		want.s6_addr[10] = want.s6_addr[11] = 0xff;
		memcpy(&want.s6_addr[12], &v4, 4);
	} else if (inet_pton(AF_INET6, addr, &want) != 1) {
		return -1;
	}
	for (i = 0; i < 256; i++) {
		union ibv_gid g;
		unsigned int w[8];
		FILE *f;
		int k;

		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gids/%d", dev, i);
		f = fopen(path, "r");
		if (!f)
			break;
		k = fscanf(f, "%x:%x:%x:%x:%x:%x:%x:%x", &w[0], &w[1], &w[2],
			   &w[3], &w[4], &w[5], &w[6], &w[7]);
		fclose(f);
		if (k != 8)
			continue;
		for (k = 0; k < 8; k++) {
			g.raw[2 * k] = w[k] >> 8;
			g.raw[2 * k + 1] = w[k];
		}
		if (memcmp(g.raw, &want, 16))
			continue;
		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gid_attrs/types/%d",
			 dev, i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && strstr(line, "RoCE v2")) {
			fclose(f);
			*gid = g;
			return i;
		}
		fclose(f);
	}
	return -1;
}

bool parse_index(const char *arg, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || end == arg || *end || v < 0 || v > 255)
		return false;
	*out = (int)v;
	return true;
}
