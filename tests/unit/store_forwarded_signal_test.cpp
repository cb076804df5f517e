// Tests of a forwarded signal's event: its facts, the words made of them, and the request a title
// names, from this build's events and from the facts an older file's words give (schema.cpp).
#include "store/forwarded_signal.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace traindoc::store {
namespace {

const SignalSender kSlurm{4242, SI_USER, "slurmstepd"};
const SignalSender kTerminal{0, SI_KERNEL, ""};

TEST(ForwardedSignal, HoldsTheSignalTheProcessesItReachedAndItsSenderAsFacts) {
  Event e = forwarded_event(5, {SIGTERM, 3, kSlurm});
  EXPECT_EQ(e.kind, EventKind::kSignalForwarded);
  EXPECT_EQ(e.t_ns, 5);
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.a, SIGTERM);
  EXPECT_EQ(e.b, 3);
  EXPECT_EQ(e.c, SI_USER);
  EXPECT_EQ(e.name, "slurmstepd");
  EXPECT_EQ(e.text, "SIGTERM from pid 4242 (slurmstepd), passed on to 3 process(es)");
  EXPECT_EQ(forwarded_request(e), "SIGTERM from pid 4242 (slurmstepd)");
  EXPECT_FALSE(second_interrupt(e));
}

TEST(ForwardedSignal, SaysHowManyHadItAlready) {
  Event e = forwarded_event(5, {SIGTERM, 0, {7, SI_USER, "timeout"}, 1});
  EXPECT_EQ(e.text, "SIGTERM from pid 7 (timeout), passed on to 0 process(es) (1 had it already)");
  EXPECT_EQ(forwarded_request(e), "SIGTERM from pid 7 (timeout)");
}

TEST(ForwardedSignal, NamesEachKindOfSender) {
  EXPECT_EQ(sender_words(kTerminal), "the terminal");
  EXPECT_EQ(sender_words({4242, SI_USER, ""}), "pid 4242");  // gone before it was looked at
  EXPECT_EQ(sender_words({4242, SI_QUEUE, "python3"}), "pid 4242 (python3)");
  EXPECT_EQ(sender_words({0, SI_USER, ""}),
            "a process outside traindoc's pid namespace (its container's runtime or host: docker "
            "stop or a Kubernetes pod's end)");
  Event e = forwarded_event(5, {SIGINT, 0, kTerminal});
  EXPECT_EQ(e.text, "SIGINT from the terminal, passed on to 0 process(es)");
  EXPECT_EQ(forwarded_request(e), "SIGINT from the terminal");
}

TEST(ForwardedSignal, TheSecondInterruptKills) {
  Event e = forwarded_event(5, {SIGKILL, 12, kTerminal});
  EXPECT_EQ(e.text, "SIGKILL at the second interrupt, sent to 12 process(es)");
  EXPECT_EQ(e.a, SIGKILL);
  EXPECT_TRUE(second_interrupt(e));
  EXPECT_EQ(forwarded_request(e), "SIGKILL at the second interrupt");
}

// A sender's name may hold anything, the words of the event's own text too: the request is made
// of the facts, never cut out of the text.
TEST(ForwardedSignal, ASendersNameMayHoldAnything) {
  Event e = forwarded_event(5, {SIGHUP, 2, {9, SI_USER, "a), passed on"}});
  EXPECT_EQ(forwarded_request(e), "SIGHUP from pid 9 (a), passed on)");
}

// Events of older files: a signal without a sender (words too old to name one) is told alone;
// words no traindoc wrote, as they are.
TEST(ForwardedSignal, TellsTheRequestsOfOlderEvents) {
  Event old{5, EventKind::kSignalForwarded, 0, "SIGHUP, sent to 2 process(es)", SIGHUP, 2};
  EXPECT_EQ(forwarded_request(old), "SIGHUP");
  Event unread{5, EventKind::kSignalForwarded, 0, "SIGUSR1 from nowhere"};
  EXPECT_EQ(forwarded_request(unread), "SIGUSR1 from nowhere");
  EXPECT_FALSE(second_interrupt(unread));
}

}  // namespace
}  // namespace traindoc::store
