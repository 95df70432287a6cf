// stragglesim-gpu: the GPU-side driver. Today: `devices` reports what CUDA and NCCL see.
#include <CLI/CLI.hpp>
#include <iostream>

#include "gpu_backend/cuda/check.hpp"
#include "gpu_backend/cuda/devices.hpp"

int main(int argc, char** argv) {
  CLI::App app{"stragglesim-gpu: run schedules on GPUs with NCCL"};
  app.require_subcommand(1);
  CLI::App* devices = app.add_subcommand("devices", "List the CUDA devices and the CUDA/NCCL versions");
  devices->callback([] {
    const ssim::gpu::DeviceReport r = ssim::gpu::query_devices();
    std::cout << ssim::gpu::format_device_report(r);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cerr << "stragglesim-gpu: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
