// Tests of a forwarded signal's event: its numbers, the words made of them, and the request a
// title names, from this build's events and from the words of older files.
#include "store/forwarded_signal.h"

#include <gtest/gtest.h>
#include <signal.h>

namespace traindoc::store {
namespace {

TEST(ForwardedSignal, HoldsTheSignalAndTheProcessesItReachedAsNumbers) {
  Event e = forwarded_event(5, 4242, {SIGTERM, 3, "pid 4242 (slurmstepd)"});
  EXPECT_EQ(e.kind, EventKind::kSignalForwarded);
  EXPECT_EQ(e.t_ns, 5);
  EXPECT_EQ(e.pid, 4242);
  EXPECT_EQ(e.a, SIGTERM);
  EXPECT_EQ(e.b, 3);
  EXPECT_EQ(e.text, "SIGTERM from pid 4242 (slurmstepd), passed on to 3 process(es)");
  EXPECT_EQ(forwarded_request(e), "SIGTERM from pid 4242 (slurmstepd)");
  EXPECT_FALSE(second_interrupt(e));
}

TEST(ForwardedSignal, SaysHowManyHadItAlready) {
  Event e = forwarded_event(5, 7, {SIGTERM, 0, "pid 7 (timeout)", 1});
  EXPECT_EQ(e.text, "SIGTERM from pid 7 (timeout), passed on to 0 process(es) (1 had it already)");
  EXPECT_EQ(forwarded_request(e), "SIGTERM from pid 7 (timeout)");
}

TEST(ForwardedSignal, TheSecondInterruptKills) {
  Event e = forwarded_event(5, 0, {SIGKILL, 12, "the terminal"});
  EXPECT_EQ(e.text, "SIGKILL at the second interrupt, sent to 12 process(es)");
  EXPECT_EQ(e.a, SIGKILL);
  EXPECT_TRUE(second_interrupt(e));
  EXPECT_EQ(forwarded_request(e), "SIGKILL at the second interrupt");
}

// A sender's name may hold the words of a delivery: the request ends where the event's own begins.
TEST(ForwardedSignal, ASendersWordsMayHoldAnything) {
  Event e = forwarded_event(5, 9, {SIGHUP, 2, "pid 9 (, passed on)"});
  EXPECT_EQ(forwarded_request(e), "SIGHUP from pid 9 (, passed on)");
}

// Older files: the numbers read from their words (schema.cpp), and their words as they are.
TEST(ForwardedSignal, TellsTheRequestsOfOlderWords) {
  Event old{5,       EventKind::kSignalForwarded,
            0,       "SIGQUIT from the terminal, sent to 1 process(es)",
            SIGQUIT, 1};
  EXPECT_EQ(forwarded_request(old), "SIGQUIT from the terminal");
  old = {5, EventKind::kSignalForwarded, 0, "SIGHUP, sent to 2 process(es)", SIGHUP, 2};
  EXPECT_EQ(forwarded_request(old), "SIGHUP");
  Event unread{5, EventKind::kSignalForwarded, 0, "SIGUSR1 from nowhere"};
  EXPECT_EQ(forwarded_request(unread), "SIGUSR1 from nowhere");
  EXPECT_FALSE(second_interrupt(unread));
}

}  // namespace
}  // namespace traindoc::store
