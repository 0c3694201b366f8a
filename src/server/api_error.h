// Errors as OpenAI's clients expect them: an HTTP status and
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// `param` names the offending request field (null when none).
#pragma once

#include <string>

#include "base/status.h"
#include "server/http_types.h"

namespace tally::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;    // "" -> null
  std::string code;     // "" -> null
  int retry_after = 0;  // seconds, for 429 / 503 (the Retry-After header); 0 = none

  static ApiError bad_request(std::string message, std::string param = {});
  static ApiError not_found(std::string message, std::string param = {}, std::string code = {});
  static ApiError unauthorized(std::string message);
  static ApiError rate_limited(std::string message);
  static ApiError overloaded(std::string message);  // 503
  static ApiError internal(std::string message);    // 500
  static ApiError with_status(int status, std::string message);
};

// The JSON text of the error body.
std::string api_error_json(const ApiError& error);
HttpResponse api_error_response(const ApiError& error);

// An engine Status as an API error: InvalidArgument / OutOfRange -> 400 (param: the
// Status::field, when it names one), ResourceExhausted -> 503, NotFound -> 404, others -> 500.
ApiError api_error_from_status(const Status& status);

}  // namespace tally::server
