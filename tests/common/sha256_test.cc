#include "common/sha256.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "common/fs.h"
#include "common/ids.h"

namespace roboloop {
namespace {

// FIPS 180-2 / NIST test vectors.
TEST(Sha256, KnownVectors) {
  EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, StreamingEqualsOneShotForAMillionAs) {
  Sha256 hasher;
  std::string thousand(1000, 'a');
  for (int i = 0; i < 1000; ++i) hasher.Update(thousand);
  EXPECT_EQ(hasher.HexDigest(),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST(Sha256, FileMatchesBytesAndMissingFileNamesPath) {
  std::string dir = JoinPath(testing::TempDir(), NewUuid());
  ASSERT_TRUE(MakeDirs(dir).ok());
  std::string path = JoinPath(dir, "data.bin");
  std::string content(3 << 20, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 131 % 251);
  ASSERT_TRUE(WriteFileAtomic(path, content).ok());
  auto digest = Sha256File(path);
  ASSERT_TRUE(digest.ok()) << digest.status();
  EXPECT_EQ(*digest, Sha256Hex(content));

  auto missing = Sha256File(JoinPath(dir, "absent"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("absent"), std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST(Sha256, HexPredicates) {
  EXPECT_TRUE(IsSha256Hex(Sha256Hex("x")));
  EXPECT_FALSE(IsSha256Hex("abc"));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'G')));
  EXPECT_FALSE(IsSha256Hex(std::string(64, 'A')));
  EXPECT_TRUE(IsLowerHex("00ff"));
  EXPECT_FALSE(IsLowerHex(""));
}

}  // namespace
}  // namespace roboloop
