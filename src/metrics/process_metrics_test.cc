#include "metrics/process_metrics.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <thread>

namespace tessera::metrics {
namespace {

TEST(ProcessMetricsTest, CountsDescriptorsThreadsAndMemory) {
  auto before = ReadProcessStats();
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_GT(before->resident_bytes, 0);
  EXPECT_GE(before->virtual_bytes, before->resident_bytes);
  EXPECT_GE(before->threads, 1);
  EXPECT_GT(before->max_fds, 0);
  const int fd = ::open("/dev/null", O_RDONLY);
  bool stop = false;
  std::thread extra([&] {
    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
      std::this_thread::yield();
    }
  });
  auto during = ReadProcessStats();
  __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
  extra.join();
  ::close(fd);
  ASSERT_TRUE(during.ok());
  EXPECT_EQ(during->open_fds, before->open_fds + 1);
  EXPECT_EQ(during->threads, before->threads + 1);
}

TEST(ProcessMetricsTest, RendersTheStandardNames) {
  Registry registry;
  ASSERT_TRUE(RegisterProcessMetrics(&registry).ok());
  const std::string text = registry.RenderPrometheus();
  for (const char* name :
       {"process_resident_memory_bytes ", "process_virtual_memory_bytes ",
        "process_open_fds ", "process_max_fds ", "process_threads "}) {
    EXPECT_NE(text.find(std::string("\n") + name), std::string::npos)
        << name << " in\n" << text;
  }
}

}  // namespace
}  // namespace tessera::metrics
