#include "common/error.hpp"

#include <exception>
#include <new>

namespace ssim {
namespace {

constexpr const char* kReportRequest =
    "\nThis is a bug in stragglesim, not a problem with your input: please report it with the "
    "command line and the input files.";

}  // namespace

// A message may quote what the user gave (a name, a flag value, a line of a file): control
// characters other than line breaks and tabs are shown as \xNN, so no escape sequence
// reaches the terminal.
std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7F) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

void check_failed(const char* file, int line, const char* expr, const std::string& what) {
  throw InternalError(std::string("internal check failed at ") + file + ":" + std::to_string(line) +
                      ": " + expr + (what.empty() ? "" : " (" + what + ")"));
}

int report_exception(std::string_view program, std::ostream& err, std::string_view context) {
  const std::string prefix = std::string(program) + ": error: " +
                             (context.empty() ? std::string() : printable(context) + ": ");
  try {
    throw;
  } catch (const Interrupted& e) {
    err << program << ": interrupted: " << e.what() << "\n";
    return 128 + e.signal_number();
  } catch (const InputError& e) {
    err << prefix << printable(e.what()) << "\n";
    return kExitInput;
  } catch (const UsageError& e) {
    err << prefix << printable(e.what()) << "\n";
    return kExitUsage;
  } catch (const ResourceError& e) {
    err << prefix << printable(e.what()) << "\n";
    return kExitResource;
  } catch (const std::bad_alloc&) {
    err << prefix
        << "out of memory. The inputs need more memory than this machine could give; reduce the "
           "rank "
           "count, chunks, iterations or sweep points.\n";
    return kExitResource;
  } catch (const InternalError& e) {
    err << prefix << printable(e.what()) << kReportRequest << "\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    err << prefix << "internal error: unexpected exception: " << printable(e.what())
        << kReportRequest << "\n";
    return kExitInternal;
  } catch (...) {
    err << prefix << "internal error: unexpected exception of unknown type" << kReportRequest
        << "\n";
    return kExitInternal;
  }
}

}  // namespace ssim
