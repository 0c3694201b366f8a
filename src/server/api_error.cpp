#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace tally::server {

ApiError ApiError::bad_request(std::string message, std::string param) {
  return {400, std::move(message), "invalid_request_error", std::move(param), {}, 0};
}

ApiError ApiError::not_found(std::string message, std::string param, std::string code) {
  return {404, std::move(message), "invalid_request_error", std::move(param), std::move(code), 0};
}

ApiError ApiError::unauthorized(std::string message) {
  return {401, std::move(message), "invalid_request_error", {}, "invalid_api_key", 0};
}

ApiError ApiError::rate_limited(std::string message) {
  return {429, std::move(message), "rate_limit_exceeded", {}, "rate_limit_exceeded", 0};
}

ApiError ApiError::overloaded(std::string message) {
  return {503, std::move(message), "server_overloaded", {}, {}, 1};
}

ApiError ApiError::internal(std::string message) {
  return {500, std::move(message), "server_error", {}, {}, 0};
}

ApiError ApiError::with_status(int status, std::string message) {
  const char* type = status >= 500 ? "server_error" : "invalid_request_error";
  return {status, std::move(message), type, {}, {}, 0};
}

std::string api_error_json(const ApiError& error) {
  nlohmann::json body = {
      {"message", error.message}, {"type", error.type}, {"param", nullptr}, {"code", nullptr}};
  if (!error.param.empty()) body["param"] = error.param;
  if (!error.code.empty()) body["code"] = error.code;
  nlohmann::json root = {{"error", std::move(body)}};
  // Messages may quote client bytes: never let invalid UTF-8 break the JSON.
  return root.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

HttpResponse api_error_response(const ApiError& error) {
  HttpResponse response;
  response.status = error.status;
  response.body = api_error_json(error);
  if (error.retry_after > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(error.retry_after));
  }
  if (error.status == 401) response.headers.emplace_back("WWW-Authenticate", "Bearer");
  return response;
}

ApiError api_error_from_status(const Status& status) {
  switch (status.code()) {
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kOutOfRange:
    case ErrorCode::kFormat:
      return ApiError::bad_request(status.message(), std::string(status.field()));
    case ErrorCode::kNotFound:
      return ApiError::not_found(status.message());
    case ErrorCode::kResourceExhausted:
    case ErrorCode::kOutOfMemory:
      return ApiError::overloaded(status.message());
    case ErrorCode::kCancelled:
      return ApiError::overloaded(status.message());  // the server is shutting down
    default:
      return ApiError::internal(status.message());
  }
}

}  // namespace tally::server
