// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A plain TCP program whose data is checked, for rsockets' preload
 * library: nothing in it knows RDMA, and it uses only the calls every
 * sockets program does (socket() without flags, bind, listen, accept,
 * connect, send, recv, close), which librspreload.so turns into
 * rsockets.  (Python's sockets ask for SOCK_CLOEXEC, which the preload
 * library leaves to the kernel's TCP.)
 *
 * The client sends an 8-byte length and that many bytes of a seeded
 * pseudo-random stream in chunks of varied sizes; the server reads them
 * all, answers with the 64-bit FNV-1a hash of what it read and exits;
 * the client compares it with the hash of what it sent.
 *
 * usage: tcp_check server ADDR PORT
 *        tcp_check client ADDR PORT BYTES
 * Exits 0 when the hashes match (the client prints "tcp_check: OK").
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define CHUNK	(256 * 1024)

static uint64_t fnv(uint64_t h, const uint8_t *p, size_t n)
{
	while (n--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* xorshift64*: the stream both sides can draw. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

static int io_all(int fd, void *buf, size_t n, int out)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t r = out ? send(fd, p, n, 0) : recv(fd, p, n, 0);

		if (r <= 0)
			return -1;
		p += r;
		n -= r;
	}
	return 0;
}

static int sock_at(const char *addr, const char *port, struct sockaddr_in *sa)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(atoi(port));
	if (fd < 0 || inet_pton(AF_INET, addr, &sa->sin_addr) != 1) {
		perror("tcp_check: socket");
		exit(2);
	}
	return fd;
}

static int serve(const char *addr, const char *port)
{
	static uint8_t buf[CHUNK];
	struct sockaddr_in sa;
	int one = 1, lfd = sock_at(addr, port, &sa), fd;
	uint64_t total, left, h = 0xcbf29ce484222325ULL;

	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		perror("tcp_check: server");
		return 1;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("tcp_check: accept");
		return 1;
	}
	if (io_all(fd, &total, sizeof(total), 0))
		return 1;
	for (left = total; left;) {
		size_t n = left < CHUNK ? left : CHUNK;
		ssize_t r = recv(fd, buf, n, 0);

		if (r <= 0) {
			printf("tcp_check: server: peer closed with %" PRIu64 " bytes to come\n",
			       left);
			return 1;
		}
		h = fnv(h, buf, r);
		left -= r;
	}
	if (io_all(fd, &h, sizeof(h), 1))
		return 1;
	close(fd);
	close(lfd);
	printf("tcp_check: server: %" PRIu64 " bytes\n", total);
	return 0;
}

static int client(const char *addr, const char *port, uint64_t total)
{
	static uint8_t buf[CHUNK];
	struct sockaddr_in sa;
	int fd = sock_at(addr, port, &sa);
	uint64_t seed = total | 1, left, h = 0xcbf29ce484222325ULL, theirs;
	size_t i, n;

	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    io_all(fd, &total, sizeof(total), 1)) {
		perror("tcp_check: client");
		return 1;
	}
	for (left = total; left; left -= n) {
		n = 1 + next(&seed) % CHUNK;
		if (n > left)
			n = left;
		for (i = 0; i < n; i++)
			buf[i] = next(&seed) >> 56;
		h = fnv(h, buf, n);
		if (io_all(fd, buf, n, 1))
			return 1;
	}
	if (io_all(fd, &theirs, sizeof(theirs), 0))
		return 1;
	close(fd);
	if (theirs != h) {
		printf("tcp_check: FAIL: the server's hash of %" PRIu64
		       " bytes is %016" PRIx64 ", the client's %016" PRIx64 "\n",
		       total, theirs, h);
		return 1;
	}
	printf("tcp_check: OK: %" PRIu64 " bytes, FNV-1a %016" PRIx64 "\n",
	       total, h);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "server"))
		return serve(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], strtoull(argv[4], NULL, 0));
	fprintf(stderr, "usage: tcp_check server ADDR PORT | client ADDR PORT BYTES\n");
	return 2;
}
