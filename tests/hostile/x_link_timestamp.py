"""Right answers; timestamp.txt is a link to /etc/shadow (its first line would be read as the time)."""
LINKS = {"timestamp.txt": "/etc/shadow"}
EXPECT = {"score": 7, "flags": {"symlink"}, "message": "timestamp.txt", "absent": ["root:"]}
