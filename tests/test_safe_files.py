"""Hostile files: FIFOs, devices, folders, links and oversized files are refused, not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from backends.errors import FileRefused
from backends.safe_files import (
    open_for_write,
    overwrite,
    read_regular,
    read_regular_status,
    refuse_links_in,
)


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


def test_the_status_read_is_the_file_read(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"four")
    data, status = read_regular_status(path, limit=10, follow=False, within=tmp_path)
    assert data == b"four" and (status.st_size, status.st_ino) == (4, path.stat().st_ino)


def test_overwrite_replaces_in_place_and_never_through_a_link(tmp_path: Path) -> None:
    path = tmp_path / "note"
    overwrite(path, b"a longer first note")
    overwrite(path, b"second")
    assert path.read_bytes() == b"second"
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    (tmp_path / "link").symlink_to(target)
    with pytest.raises(FileRefused, match="symbolic link"):
        overwrite(tmp_path / "link", b"x")
    assert target.read_bytes() == b"keep"


def test_a_folder_holding_a_link_or_being_one_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "graph"
    refuse_links_in(folder)  # missing: holds none
    folder.mkdir()
    (folder / "db").write_bytes(b"")
    refuse_links_in(folder)
    (folder / "db.wal").symlink_to(tmp_path / "elsewhere")  # dangling: a file it would create
    with pytest.raises(FileRefused, match=r"db\.wal: is a symbolic link"):
        refuse_links_in(folder)
    (tmp_path / "linked").symlink_to(folder)
    with pytest.raises(FileRefused, match="linked: is a symbolic link"):
        refuse_links_in(tmp_path / "linked")
