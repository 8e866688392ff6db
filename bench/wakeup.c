/*
 * bench/wakeup.c: what a wake-up between two processes costs on this
 * machine, the two ways a session and the state worker could wake each
 * other (Linux only):
 *
 *   signal  kill(SIGURG) to a process sleeping in epoll_wait on a signalfd,
 *           which then reads it: PostgreSQL 15's SetLatch and WaitLatch
 *   futex   FUTEX_WAKE of a process sleeping in FUTEX_WAIT on a word in
 *           shared memory: common/latch_sleep.c
 *
 * Two processes wake each other in turn, ROUNDS times each way; it prints
 * the round trip and the waker's own time in its wake call.
 *
 *   cc -O2 -o /tmp/wakeup bench/wakeup.c && /tmp/wakeup
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 100000

typedef struct Side
{
	_Atomic int word;			/* set by the waker, taken by the sleeper */
	pid_t		pid;
} Side;

static int	epfd;
static int	sigfd;

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static void
sleep_until_set(Side *me, int futex)
{
	while (!atomic_exchange(&me->word, 0))
	{
		if (futex)
			syscall(SYS_futex, &me->word, FUTEX_WAIT, 0, NULL, NULL, 0);
		else
		{
			struct epoll_event ev;
			struct signalfd_siginfo si;

			if (epoll_wait(epfd, &ev, 1, 1000) > 0)
				while (read(sigfd, &si, sizeof(si)) > 0)
					;
		}
	}
}

/* Returns the time spent in the wake call. */
static double
wake(Side *other, int futex)
{
	double		t;

	atomic_store(&other->word, 1);
	t = now();
	if (futex)
		syscall(SYS_futex, &other->word, FUTEX_WAKE, 1, NULL, NULL, 0);
	else
		kill(other->pid, SIGURG);
	return now() - t;
}

static void
run(int futex)
{
	Side	   *sides = mmap(NULL, 2 * sizeof(Side), PROT_READ | PROT_WRITE,
							 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	sigset_t	mask;
	pid_t		child;
	struct epoll_event ev = {.events = EPOLLIN};
	int			me;
	double		start,
				in_wake = 0;

	if (sides == MAP_FAILED)
	{
		perror("mmap");
		exit(1);
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGURG);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sides[0].pid = getpid();
	fflush(stdout);
	child = fork();
	if (child < 0)
	{
		perror("fork");
		exit(1);
	}
	me = child == 0 ? 1 : 0;
	sides[1].pid = child == 0 ? getpid() : child;
	sigfd = signalfd(-1, &mask, SFD_NONBLOCK);
	epfd = epoll_create1(0);
	epoll_ctl(epfd, EPOLL_CTL_ADD, sigfd, &ev);
	start = now();
	for (int i = 0; i < ROUNDS; i++)
	{
		if (me == 0)
		{
			in_wake += wake(&sides[1], futex);
			sleep_until_set(&sides[0], futex);
		}
		else
		{
			sleep_until_set(&sides[1], futex);
			in_wake += wake(&sides[0], futex);
		}
	}
	if (me == 1)
		_exit(0);
	waitpid(child, NULL, 0);
	printf("%-6s  round trip %6.1f us   waker's call %5.2f us\n",
		   futex ? "futex" : "signal", (now() - start) / ROUNDS * 1e6, in_wake / ROUNDS * 1e6);
	munmap(sides, 2 * sizeof(Side));
}

int
main(void)
{
	for (int round = 0; round < 2; round++)
	{
		run(0);
		run(1);
	}
	return 0;
}
