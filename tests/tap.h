/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * TAP output and data checks shared by the userspace tests.
 *
 * A check prints "ok N - case: what" or "not ok N - ..." followed by the
 * details its helpers gathered since the previous check, as "# " lines,
 * so that a failure says what was seen and not only that it failed.
 */
#ifndef SOFTRVT_TESTS_TAP_H
#define SOFTRVT_TESTS_TAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* The running case, printed before each of its checks; NULL for none. */
extern const char *tap_case;

void detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void clear_details(void);
bool ok(bool cond, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Print the plan; return the exit status: 1 if any check failed. */
int tap_done(void);

long long now_ms(void);

/* A byte pattern with no short period, different for each seed. */
void pattern(uint8_t *p, size_t n, uint32_t seed);
/* Whether @got holds @want; the first difference becomes a detail. */
bool same(const uint8_t *got, const uint8_t *want, size_t n,
	  const char *what);
/* Whether every byte of @p is still @v. */
bool all_bytes(const uint8_t *p, size_t n, uint8_t v, const char *what);
/* A completion, field by field, as a detail. */
void detail_wc(const char *what, const struct ibv_wc *wc);
int find_gid(const char *dev, const char *addr, union ibv_gid *gid);
/* A GID index or the like, 0 to 255, from the command line. */
bool parse_index(const char *arg, int *out);
#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

#endif /* SOFTRVT_TESTS_TAP_H */
