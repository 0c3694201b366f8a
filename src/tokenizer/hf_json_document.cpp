#include "tokenizer/hf_json_document.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tally::tok {

namespace {

// Closes the descriptor on every path out of load().
struct FileDescriptor {
  int fd;
  ~FileDescriptor() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

Status HfJsonDocument::parse_text(size_t size) {
  // Sized for this text before the first touch, so the buffers fault in as huge pages. The
  // sizes are lower bounds of what simdjson allocates for `size` bytes (document::allocate,
  // dom_parser_implementation::set_capacity: a tape word, 5/3 string bytes and a 4-byte
  // structural index per text byte); both are simdjson's own members, public in its header.
  const size_t capacity = std::max(size, simdjson::dom::MINIMAL_DOCUMENT_CAPACITY);
  if (parser_.allocate(capacity) != simdjson::SUCCESS || doc_.allocate(capacity) != simdjson::SUCCESS) {
    return make_error(ErrorCode::kOutOfMemory, "no memory to parse {} bytes of JSON", size);
  }
  advise_huge_pages(doc_.tape.get(), capacity * sizeof(uint64_t));
  advise_huge_pages(doc_.string_buf.get(), capacity / 3 * 5);
  advise_huge_pages(parser_.implementation->structural_indexes.get(), capacity * sizeof(uint32_t));
  const auto* bytes = reinterpret_cast<const uint8_t*>(text_.data());
  if (auto err = parser_.parse_into_document(doc_, bytes, size, /*realloc_if_needed=*/false).get(root_);
      err != simdjson::SUCCESS) {
    return make_error(ErrorCode::kFormat, "not valid JSON ({})", simdjson::error_message(err));
  }
  return Status::ok_status();
}

Result<std::unique_ptr<HfJsonDocument>> HfJsonDocument::load(const std::string& path) {
  const FileDescriptor file{::open(path.c_str(), O_RDONLY | O_CLOEXEC)};
  if (file.fd < 0) {
    return make_error(errno == ENOENT ? ErrorCode::kNotFound : ErrorCode::kIo, "{}: cannot open: {}",
                      path, std::strerror(errno));
  }
  struct stat st {};
  if (::fstat(file.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    return make_error(ErrorCode::kIo, "{}: not a regular file", path);
  }
  const auto size = static_cast<size_t>(st.st_size);
  std::unique_ptr<HfJsonDocument> doc(new HfJsonDocument());
  TALLY_ASSIGN_OR_RETURN(doc->text_, HugePageBuffer::create(size + simdjson::SIMDJSON_PADDING,
                                                            HugePageBuffer::Commit::kOnFirstWrite));
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::read(file.fd, doc->text_.data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return make_error(ErrorCode::kIo, "{}: read failed after {} of {} bytes", path, done, size);
    done += static_cast<size_t>(n);
  }
  TALLY_RETURN_IF_ERROR(doc->parse_text(size).with_context(path));
  return doc;
}

Result<std::unique_ptr<HfJsonDocument>> HfJsonDocument::parse(std::string_view text) {
  std::unique_ptr<HfJsonDocument> doc(new HfJsonDocument());
  TALLY_ASSIGN_OR_RETURN(doc->text_, HugePageBuffer::create(text.size() + simdjson::SIMDJSON_PADDING,
                                                            HugePageBuffer::Commit::kOnFirstWrite));
  if (!text.empty()) std::memcpy(doc->text_.data(), text.data(), text.size());
  TALLY_RETURN_IF_ERROR(doc->parse_text(text.size()));
  return doc;
}

}  // namespace tally::tok
