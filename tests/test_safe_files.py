"""Hostile files: FIFOs, devices, folders, links and oversized files are refused, not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backends.safe_files import FileRefused, open_for_write, read_regular


def test_a_regular_file_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello")
    assert read_regular(path, limit=5) == b"hello"


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.txt"
    path.write_bytes(b"hello!")
    with pytest.raises(FileRefused, match="over the limit"):
        read_regular(path, limit=5)


def test_a_fifo_is_refused_without_hanging(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(FileRefused, match="not a regular file"):
        read_regular(fifo, limit=100)


@pytest.mark.parametrize("path", [Path("/dev/zero"), Path("/dev/null")])
def test_a_device_is_refused(path: Path) -> None:
    with pytest.raises(FileRefused, match="not a regular file"):
        read_regular(path, limit=100)


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(FileRefused, match="not a regular file"):
        read_regular(tmp_path, limit=100)


def test_a_final_link_is_refused_only_when_told(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"x")
    link = tmp_path / "link"
    link.symlink_to(target)
    assert read_regular(link, limit=10) == b"x"
    with pytest.raises(FileRefused, match="symbolic link"):
        read_regular(link, limit=10, follow=False)


def test_a_link_in_a_parent_out_of_the_root_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f").write_bytes(b"secret")
    home = tmp_path / "home"
    home.mkdir()
    (home / "sub").symlink_to(outside)
    with pytest.raises(FileRefused, match="outside"):
        read_regular(home / "sub" / "f", limit=10, within=home)


def test_a_missing_file_raises_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_regular(tmp_path / "none", limit=10)


def test_writing_through_a_final_link_is_refused_and_the_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    link = tmp_path / "link"
    link.symlink_to(target)
    with pytest.raises(FileRefused, match="symbolic link"):
        open_for_write(link, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "created-outside")
    with pytest.raises(FileRefused):
        open_for_write(dangling, os.O_WRONLY | os.O_CREAT)
    assert target.read_bytes() == b"keep"
    assert not (tmp_path / "created-outside").exists()


def test_writing_a_regular_file_works(tmp_path: Path) -> None:
    path = tmp_path / "f"
    fd = open_for_write(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        os.write(fd, b"line\n")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"line\n"
