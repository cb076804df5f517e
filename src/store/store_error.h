// The one exception type of the store: a run.db that cannot be opened, written or understood.
// Thrown by StoreWriter (supervisor) and read_evidence (analyze, report); caught at their
// boundaries and turned into one message. The message always names the database file.
#pragma once

#include <stdexcept>
#include <string>

namespace traindoc::store {

class StoreError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace traindoc::store
