// `tally generate --chat` as a user meets it: each turn is generation over the conversation
// rendered with the chat template (checked token for token against `tally generate` on the
// same transcript), and in a real terminal (tmux) the answer streams, Ctrl-C stops the answer
// but not the program, and /exit quits with status 0.
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "support/run_command.h"
#include "support/test_data.h"

namespace {

using tally_test::run_command;
using tally_test::shell_quote;

std::string tally(const std::string& args) { return tally_test::tally_binary() + " " + args; }

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\n") - b + 1);
}

// The plain template's answer to `transcript`, as `tally generate` writes it.
std::string plain_answer(const std::string& transcript, const std::string& flags) {
  auto r = run_command(tally("generate --no-echo " + flags + " --stop \"$(printf '\\nUser:')\" -p " +
                             shell_quote(transcript)));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.out;
}

TEST(Chat, EachTurnIsGenerationOverTheWholeConversation) {
  const std::string flags = "--temp 0 -n 24";
  const std::string input = tally_test::temp_dir() + "/chat_input.txt";
  std::ofstream(input) << "Tell me a story\n\n/reset\nWho is Lily?\nWhat did she do?\n/exit\nignored\n";
  auto chat = run_command(tally("generate --chat " + flags + " < " + shell_quote(input)));
  ASSERT_EQ(chat.exit_code, 0) << chat.err;

  const std::string a1 = plain_answer("User: Tell me a story\nAssistant:", flags);
  const std::string a2 = plain_answer("User: Who is Lily?\nAssistant:", flags);  // after /reset
  const std::string a3 = plain_answer("User: Who is Lily?\nAssistant: " + trim(a2) +
                                          "\nUser: What did she do?\nAssistant:", flags);
  EXPECT_FALSE(trim(a1).empty());
  EXPECT_EQ(chat.out, a1 + a2 + a3);  // the empty line is skipped, nothing after /exit runs
}

TEST(Chat, SystemPromptAndTemplateFile) {
  const std::string tmpl = tally_test::temp_dir() + "/chat_template.jinja";
  std::ofstream(tmpl) << "{{ bos_token }}{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n"
                         "{% endfor %}{% if add_generation_prompt %}[assistant]{% endif %}";
  auto chat = run_command("printf 'Hi\\n' | " +
                          tally("generate --chat --temp 0 -n 16 -p 'Be kind.' --chat-template " + tmpl));
  ASSERT_EQ(chat.exit_code, 0) << chat.err;
  auto r = run_command(tally("generate --no-echo --temp 0 -n 16 -p " +
                             shell_quote("[system] Be kind.\n[user] Hi\n[assistant]")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(chat.out, r.out);
}

TEST(Chat, BadTemplateFileIsAUsageError) {
  auto r = run_command(tally("generate --chat --chat-template /nonexistent/t.jinja"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/t.jinja"), std::string::npos) << r.err;
  const std::string bad = tally_test::temp_dir() + "/bad_template.jinja";
  std::ofstream(bad) << "{% for m in messages %}";
  r = run_command(tally("generate --chat --chat-template " + bad));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--chat-template"), std::string::npos) << r.err;
}

// A tmux server of its own (socket in the test's temp dir) with one pane running a command.
class TmuxPane {
 public:
  explicit TmuxPane(const std::string& command)
      : tmux_("tmux -S " + shell_quote(tally_test::temp_dir() + "/tmux.sock") + " -f /dev/null ") {
    auto r = run_command(tmux_ + "new-session -d -x 160 -y 50 " +
                         shell_quote(command + "; echo \"[exit $?]\"; sleep 60"));
    started_ = r.exit_code == 0;
    EXPECT_TRUE(started_) << r.err;
  }
  ~TmuxPane() { run_command(tmux_ + "kill-server"); }

  void keys(const std::string& args) { run_command(tmux_ + "send-keys " + args); }
  std::string screen() { return run_command(tmux_ + "capture-pane -p -S -1000").out; }
  // Waits until the pane's text holds `needle` (after `from`); false after the timeout.
  bool wait_for(const std::string& needle, size_t from = 0, int seconds = 60) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < end) {
      const std::string s = screen();
      if (s.size() > from && s.find(needle, from) != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }
  // Waits until text other than blanks follows `line` on the pane.
  bool wait_for_answer_after(const std::string& line, int seconds = 60) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < end) {
      const std::string s = screen();
      const size_t at = s.find(line);
      if (at != std::string::npos && s.find_first_not_of(" \n", at + line.size()) != std::string::npos)
        return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }
  bool started() const { return started_; }

 private:
  std::string tmux_;
  bool started_ = false;
};

TEST(Chat, InATerminalCtrlCStopsTheAnswerNotTheProgram) {
  if (run_command("command -v tmux").exit_code != 0) {
    if (tally_test::in_ci()) FAIL() << "tmux is not installed (scripts/setup.sh)";
    GTEST_SKIP() << "tmux is not installed (scripts/setup.sh installs it)";
  }
  // A 110M-parameter model (synthetic weights, llama's 32000-token vocabulary, so every token
  // prints text) with no end of text: its answer of 1000 tokens takes many seconds, so Ctrl-C
  // lands while it is being written.
  TALLY_REQUIRE_SHARED("models/ggml-vocab/ggml-vocab-llama-spm.gguf", vocab);
  const std::string model = tally_test::temp_dir() + "/chat_110m.gguf";
  auto convert = run_command(tally("convert --synthetic stories110M --type q4_0 --vocab-from " +
                                   shell_quote(vocab) + " -o " + model));
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  TmuxPane pane(tally("generate --chat -m " + model + " --temp 0 --ignore-eos -n 1000 -t 1"));
  ASSERT_TRUE(pane.started());
  ASSERT_TRUE(pane.wait_for("/exit or Ctrl-D quits")) << pane.screen();
  ASSERT_TRUE(pane.wait_for("\n>")) << pane.screen();  // the prompt (tmux trims its space)
  pane.keys("C-c");  // at the prompt: a fresh prompt, the program goes on
  pane.keys("'Tell me a story' Enter");
  ASSERT_TRUE(pane.wait_for("Tell me a story\n")) << pane.screen();
  ASSERT_TRUE(pane.wait_for_answer_after("Tell me a story\n")) << pane.screen();  // streaming
  pane.keys("C-c");
  ASSERT_TRUE(pane.wait_for("[stopped]")) << pane.screen();
  const size_t stopped = pane.screen().find("[stopped]");
  ASSERT_TRUE(pane.wait_for("\n>", stopped)) << pane.screen();
  pane.keys("/exit Enter");
  EXPECT_TRUE(pane.wait_for("[exit 0]")) << pane.screen();
}

}  // namespace
