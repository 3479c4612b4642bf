"""Allocates memory without bound after the answers."""
APPEND = ["chunks = []\nwhile True:\n    chunks.append(bytearray(200 * 2**20))"]
EXPECT = {"score": 7, "flags": set()}
