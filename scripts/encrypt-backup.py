#!/usr/bin/env python3
"""Encrypts a plain Finder/iTunes backup folder the way iOS 10.2 and later do, for storelens's tests.

An independent writer: it shares no code with storelens (Python's `cryptography` package does the
AES and PBKDF2) and follows the published format:

  Manifest.plist  IsEncrypted, BackupKeyBag (TLV), ManifestKey (class, little-endian, + wrapped key)
  Manifest.db     AES-256-CBC (zero IV, PKCS#7) with the ManifestKey; each Files.file an
                  NSKeyedArchiver MBFile with EncryptionKey (class + wrapped file key),
                  ProtectionClass and Size
  ab/abcdef...    each file AES-256-CBC with its own key
  password key    PBKDF2-SHA1(PBKDF2-SHA256(password, DPSL, DPIC), SALT, ITER); class keys
                  RFC 3394-wrapped with it, file keys with their class key

usage: encrypt-backup.py PLAIN OUT PASSWORD_FILE [--dpic N] [--iter N] [--damage KIND[:ARG]] [--verify]

The password is read from PASSWORD_FILE (one trailing newline dropped), never from argv.
--damage makes a broken backup: truncated-keybag, missing-class-key, bad-padding:RELATIVE_PATH,
bad-manifest, pre-10.2. --dump-file-key RELATIVE_PATH KEY_FILE writes one file's key (hex) for
the bench's `openssl enc -d`. --verify decrypts the result with iphone_backup_decrypt (PyPI) and
checks every file against the plain backup: proof that the test backup is well formed.
"""
import argparse
import os
import plistlib
import shutil
import sqlite3
import struct
import sys

from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC
from cryptography.hazmat.primitives.keywrap import aes_key_wrap

FILE_CLASS = 3      # NSFileProtectionCompleteUntilFirstUserAuthentication, what most app files use
MANIFEST_CLASS = 4  # NSFileProtectionNone, what iOS uses for Manifest.db
CLASSES = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]


def pbkdf2(algorithm, password, salt, iterations):
    return PBKDF2HMAC(algorithm=algorithm, length=32, salt=salt, iterations=iterations).derive(password)


def tlv(tag, value):
    if isinstance(value, int):
        value = struct.pack(">I", value)
    return tag + struct.pack(">I", len(value)) + value


def encrypt_cbc(key, data, bad_padding=False):
    padder = padding.PKCS7(128).padder()
    padded = padder.update(data) + padder.finalize()
    if bad_padding:
        # The last byte names more padding than a block holds: no valid PKCS#7 ending.
        padded = padded[:-1] + bytes([0x11])
    encryptor = Cipher(algorithms.AES(key), modes.CBC(b"\0" * 16)).encryptor()
    return encryptor.update(padded) + encryptor.finalize()


def mbfile_record(relative_path, size, protection_class, wrapped_key):
    """An MBFile as NSKeyedArchiver writes it into Manifest.db's Files.file."""
    objects = [
        "$null",
        {
            "$class": plistlib.UID(4),
            "RelativePath": plistlib.UID(2),
            "EncryptionKey": plistlib.UID(3),
            "LastModified": 1700000000, "Birth": 1700000000, "LastStatusChange": 1700000000,
            "InodeNumber": 123456, "Mode": 0o100644, "UserID": 501, "GroupID": 501,
            "Flags": 0, "ProtectionClass": protection_class, "Size": size,
        },
        relative_path,
        {"$class": plistlib.UID(5), "NS.data": struct.pack("<I", protection_class) + wrapped_key},
        {"$classname": "MBFile", "$classes": ["MBFile", "NSObject"]},
        {"$classname": "NSMutableData", "$classes": ["NSMutableData", "NSData", "NSObject"]},
    ]
    archive = {"$version": 100000, "$archiver": "NSKeyedArchiver", "$top": {"root": plistlib.UID(1)}, "$objects": objects}
    return plistlib.dumps(archive, fmt=plistlib.FMT_BINARY)


def read_password(path):
    with open(path, "rb") as f:
        data = f.read()
    return data[:-1] if data.endswith(b"\n") else data


def encrypt(plain, out, password, dpic, iterations, damage, dump_key=None):
    kind, _, argument = (damage or "").partition(":")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    dpsl, salt = os.urandom(20), os.urandom(20)
    password_key = pbkdf2(hashes.SHA1(), pbkdf2(hashes.SHA256(), password, dpsl, dpic), salt, iterations)
    class_keys = {c: os.urandom(32) for c in CLASSES}

    keybag = tlv(b"VERS", 4) + tlv(b"TYPE", 1) + tlv(b"UUID", os.urandom(16)) + tlv(b"HMCK", os.urandom(40))
    keybag += tlv(b"WRAP", 0) + tlv(b"SALT", salt) + tlv(b"ITER", iterations)
    if kind != "pre-10.2":
        keybag += tlv(b"DPWT", 1) + tlv(b"DPIC", dpic) + tlv(b"DPSL", dpsl)
    for c in CLASSES:
        if kind == "missing-class-key" and c == FILE_CLASS:
            continue
        keybag += tlv(b"UUID", os.urandom(16)) + tlv(b"CLAS", c) + tlv(b"WRAP", 2) + tlv(b"KTYP", 0)
        keybag += tlv(b"WPKY", aes_key_wrap(password_key, class_keys[c]))
    if kind == "truncated-keybag":
        keybag = keybag[:len(keybag) - 30]

    # The Files table, each row given its record and its file encrypted under a key of its own.
    work = os.path.join(out, ".manifest-plain.db")
    shutil.copyfile(os.path.join(plain, "Manifest.db"), work)
    db = sqlite3.connect(work)
    rows = db.execute("SELECT fileID, domain, relativePath FROM Files WHERE flags = 1").fetchall()
    for file_id, domain, relative_path in rows:
        source = os.path.join(plain, file_id[:2], file_id)
        with open(source, "rb") as f:
            data = f.read()
        file_key = os.urandom(32)
        if dump_key and relative_path == dump_key[0]:
            # For the bench: `openssl enc -d` decrypts the same bytes with this key.
            with open(dump_key[1], "w") as f:
                f.write(file_key.hex())
        wrapped = aes_key_wrap(class_keys[FILE_CLASS], file_key)
        db.execute("UPDATE Files SET file = ? WHERE fileID = ?", (mbfile_record(relative_path, len(data), FILE_CLASS, wrapped), file_id))
        os.makedirs(os.path.join(out, file_id[:2]), exist_ok=True)
        with open(os.path.join(out, file_id[:2], file_id), "wb") as f:
            f.write(encrypt_cbc(file_key, data, bad_padding=(kind == "bad-padding" and relative_path == argument)))
    db.commit()
    db.close()

    manifest_key = os.urandom(32)
    with open(work, "rb") as f:
        manifest_plain = f.read()
    os.remove(work)
    # A Manifest.db that does not decrypt: encrypted with a key other than the one ManifestKey wraps.
    with open(os.path.join(out, "Manifest.db"), "wb") as f:
        f.write(encrypt_cbc(os.urandom(32) if kind == "bad-manifest" else manifest_key, manifest_plain))

    plist = {
        "IsEncrypted": True,
        "Version": "10.0" if kind != "pre-10.2" else "9.1",
        "BackupKeyBag": keybag,
        "Lockdown": {"ProductVersion": "9.3.5" if kind == "pre-10.2" else "17.5.1", "DeviceName": "Test iPhone",
                     "ProductType": "iPhone15,2", "UniqueDeviceID": "00008120-001A2B3C4D5E802E"},
        "WasPasscodeSet": True,
    }
    if kind != "pre-10.2":
        plist["ManifestKey"] = struct.pack("<I", MANIFEST_CLASS) + aes_key_wrap(class_keys[MANIFEST_CLASS], manifest_key)
    with open(os.path.join(out, "Manifest.plist"), "wb") as f:
        plistlib.dump(plist, f, fmt=plistlib.FMT_BINARY)
    return rows


def verify(plain, out, password, rows):
    """Decrypts every file with iphone_backup_decrypt, a second independent reader."""
    from iphone_backup_decrypt import EncryptedBackup
    backup = EncryptedBackup(backup_directory=out, passphrase=password)
    for file_id, domain, relative_path in rows:
        got = backup.extract_file_as_bytes(relative_path, domain_like=domain)
        with open(os.path.join(plain, file_id[:2], file_id), "rb") as f:
            expected = f.read()
        if got != expected:
            sys.exit(f"iphone_backup_decrypt read {domain}/{relative_path} differently from the plain backup")
    print(f"iphone_backup_decrypt decrypted all {len(rows)} files of {out} to the plain backup's bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plain")
    parser.add_argument("out")
    parser.add_argument("password_file")
    parser.add_argument("--dpic", type=int, default=10_000_000)
    parser.add_argument("--iter", type=int, default=10_000)
    parser.add_argument("--damage")
    parser.add_argument("--verify", action="store_true")
    parser.add_argument("--dump-file-key", nargs=2, metavar=("RELATIVE_PATH", "KEY_FILE"))
    args = parser.parse_args()
    password = read_password(args.password_file)
    rows = encrypt(args.plain, args.out, password, args.dpic, args.iter, args.damage, args.dump_file_key)
    if args.verify:
        verify(args.plain, args.out, password, rows)


if __name__ == "__main__":
    main()
