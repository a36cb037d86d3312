#pragma once
// Exit status of an error (2 bad input, 1 otherwise) and the ranks' agreement on a set-up
// failure, so every rank stops together.
#include <exception>

namespace cnnpar::executor {

/** Exit status of an exception: 2 for bad input, 1 otherwise. */
int status_of(const std::exception_ptr& error);

/** All ranks learn whether any rank failed; the lowest failing rank prints its message.
 *  Returns the exit status (0 when every rank succeeded). */
int agree_on_failure(const std::exception_ptr& error, int rank, int size, double timeout_s);

}  // namespace cnnpar::executor
