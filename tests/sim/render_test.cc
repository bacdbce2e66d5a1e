// Offscreen rendering of the reports' external view: identical states give identical pixels,
// other states other pixels, and a frame larger than the model's offscreen buffer is refused.
#include "sim/render.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "sim/builtin_tasks.h"
#include "sim/camera_renderer.h"
#include "sim/physics_state.h"
#include "sim/task_registry.h"

namespace roboloop::sim {
namespace {

class RenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    BuiltinTaskOptions builtin;
    builtin.models_dir = ROBOLOOP_SOURCE_DIR "/configs/tasks/models";
    ASSERT_TRUE(RegisterBuiltins(&tasks_, builtin).ok());
    auto task = tasks_.Create("cartpole-swingup");
    ASSERT_TRUE(task.ok()) << task.status();
    task_ = std::move(task).value();
  }

  // Two physics states: the initial one and one with the cart moved and the pole turned.
  std::vector<double> TwoStates() {
    const mjModel* m = task_->model();
    std::unique_ptr<mjData, void (*)(mjData*)> d(mj_makeData(m), mj_deleteData);
    std::vector<double> states(2 * PhysicsStateSize(m));
    CapturePhysicsState(m, d.get(), states.data());
    d->qpos[0] = 0.5;
    d->qpos[1] = 1.2;
    CapturePhysicsState(m, d.get(), states.data() + PhysicsStateSize(m));
    return states;
  }

  TaskRegistry tasks_;
  std::unique_ptr<Task> task_;
};

TEST_F(RenderTest, SameStateSamePixelsOtherStateOtherPixels) {
  const std::vector<double> states = TwoStates();
  auto first = RenderStatesAsPng(task_->model(), states, 2, RenderOptions());
  auto again = RenderStatesAsPng(task_->model(), states, 2, RenderOptions());
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(again.ok()) << again.status();
  ASSERT_EQ(first->size(), 2u);
  EXPECT_EQ(*first, *again) << "rendering is deterministic";
  EXPECT_NE((*first)[0], (*first)[1]) << "the moved cart shows";
  EXPECT_EQ((*first)[0].substr(1, 3), "PNG");
}

TEST_F(RenderTest, DefaultFramesAreLargeAndBrightEnoughToReadTheTask) {
  EXPECT_GE(RenderOptions().width, 640);
  EXPECT_GE(RenderOptions().height, 480);
  const CameraSpec view{"view", "", RenderOptions().width, RenderOptions().height};
  CameraRenderer::Options studio;
  studio.studio = true;
  auto renderer = CameraRenderer::Create(task_->model(), {view}, studio);
  ASSERT_TRUE(renderer.ok()) << renderer.status();
  std::unique_ptr<mjData, void (*)(mjData*)> data(mj_makeData(task_->model()), mj_deleteData);
  mj_forward(task_->model(), data.get());
  std::vector<uint8_t> rgb(view.bytes());
  ASSERT_TRUE((*renderer)->Render(task_->model(), data.get(), rgb.data()).ok());
  double sum = 0;
  int dark = 0;
  for (size_t pixel = 0; pixel < rgb.size() / 3; ++pixel) {
    const int luma = (rgb[3 * pixel] + rgb[3 * pixel + 1] + rgb[3 * pixel + 2]) / 3;
    sum += luma;
    dark += luma < 20;
  }
  const double pixels = static_cast<double>(rgb.size() / 3);
  EXPECT_GT(sum / pixels, 100) << "mean brightness (0-255)";
  EXPECT_LT(dark / pixels, 0.05) << "share of near-black pixels";
}

TEST_F(RenderTest, BadSizesAndRaggedStatesAreRefused) {
  RenderOptions huge;
  huge.width = 100000;
  EXPECT_THAT(RenderStatesAsPng(task_->model(), TwoStates(), 2, huge).status().message(),
              ::testing::HasSubstr("does not fit the model's offscreen buffer"));
  EXPECT_FALSE(RenderStatesAsPng(task_->model(), std::vector<double>(3), 2, RenderOptions()).ok());
}

}  // namespace
}  // namespace roboloop::sim
