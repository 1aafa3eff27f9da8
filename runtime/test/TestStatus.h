//===- TestStatus.h - GoogleTest predicates for rt::Status ------*- C++ -*-===//
#ifndef BLASST_RUNTIME_TEST_TESTSTATUS_H
#define BLASST_RUNTIME_TEST_TESTSTATUS_H

#include "blasst/Runtime/Runtime.h"

#include <gtest/gtest.h>
#include <string>

namespace blasst::rt::testing {

inline ::testing::AssertionResult succeeds(const Status &status) {
  if (status.ok())
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << status.message();
}

/// The status is an error whose message contains `substring`.
inline ::testing::AssertionResult failsWith(const Status &status,
                                            const std::string &substring) {
  if (status.ok())
    return ::testing::AssertionFailure()
           << "succeeded; expected an error containing \"" << substring << "\"";
  if (status.message().find(substring) == std::string::npos)
    return ::testing::AssertionFailure() << "message \"" << status.message()
                                         << "\" lacks \"" << substring << "\"";
  return ::testing::AssertionSuccess();
}

} // namespace blasst::rt::testing

#endif // BLASST_RUNTIME_TEST_TESTSTATUS_H
