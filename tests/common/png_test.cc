// The PNG encoder: a valid signature and chunk layout, pixels that inflate back bit for bit,
// and sizes that do not match refused.
#include "common/png.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>

namespace roboloop {
namespace {

uint32_t BigEndianAt(const std::string& s, size_t at) {
  return (uint32_t(uint8_t(s[at])) << 24) | (uint32_t(uint8_t(s[at + 1])) << 16) | (uint32_t(uint8_t(s[at + 2])) << 8) |
         uint32_t(uint8_t(s[at + 3]));
}

TEST(PngTest, PixelsInflateBackBitForBit) {
  const int width = 5, height = 3;
  std::vector<uint8_t> rgb(width * height * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = static_cast<uint8_t>(i * 7);
  auto png = EncodePngRgb(width, height, rgb);
  ASSERT_TRUE(png.ok()) << png.status();
  ASSERT_EQ(png->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_EQ(png->substr(12, 4), "IHDR");
  EXPECT_EQ(BigEndianAt(*png, 16), 5u);
  EXPECT_EQ(BigEndianAt(*png, 20), 3u);
  const size_t idat = 8 + 12 + 13;
  ASSERT_EQ(png->substr(idat + 4, 4), "IDAT");
  const uint32_t length = BigEndianAt(*png, idat);
  const std::string packed = png->substr(idat + 8, length);
  std::string raw(height * (1 + width * 3), '\0');
  uLongf raw_size = raw.size();
  ASSERT_EQ(uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_size, reinterpret_cast<const Bytef*>(packed.data()),
                       packed.size()),
            Z_OK);
  for (int row = 0; row < height; ++row) {
    EXPECT_EQ(raw[row * (1 + width * 3)], '\0') << "filter byte of row " << row;
    EXPECT_EQ(0, std::memcmp(raw.data() + row * (1 + width * 3) + 1, rgb.data() + row * width * 3, width * 3));
  }
  EXPECT_EQ(png->substr(png->size() - 8, 4), "IEND");
}

TEST(PngTest, MismatchedSizesAreRefused) {
  EXPECT_FALSE(EncodePngRgb(2, 2, std::vector<uint8_t>(11)).ok());
  EXPECT_THAT(EncodePngRgb(0, 2, {}).status().message(), ::testing::HasSubstr("not a 0x2 RGB image"));
}

}  // namespace
}  // namespace roboloop
