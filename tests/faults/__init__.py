"""The fault suite: real processes killed, disks filled, homes made read-only, hostile inputs."""
