package import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writing files that hold secrets: created with a restrictive mode from the start (no window in
/// which another user could read them) and moved into place atomically.
package enum SecureFile {
    /// Writes `contents` to `path` with permissions `mode` (0600 for keys), replacing any file there.
    package static func write(_ contents: String, to path: String, mode: Int = 0o600) throws {
        try write(bytes: Array(contents.utf8), to: path, mode: mode)
    }

    /// Writes `bytes` to `path` with permissions `mode`, replacing any file there.
    package static func write(bytes: [UInt8], to path: String, mode: Int = 0o600) throws {
        let mode = mode_t(mode)
        let temporary = path + ".tmp-\(UInt32.random(in: 0 ... .max))"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            throw HeraldTLSError(code: .fileSystem, message: "cannot create \(temporary): errno \(errno)")
        }
        var ok = fchmod(fd, mode) == 0
        var written = 0
        while ok && written < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                posixWrite(fd, raw.baseAddress! + written, raw.count - written)
            }
            if n < 0 {
                if errno == EINTR { continue }
                ok = false
            } else {
                written += n
            }
        }
        ok = (fsync(fd) == 0) && ok
        close(fd)
        guard ok, rename(temporary, path) == 0 else {
            let code = errno
            unlink(temporary)
            throw HeraldTLSError(code: .fileSystem, message: "cannot write \(path): errno \(code)")
        }
    }

    /// Creates a new file at `path` readable by this user only (`mode`, 0600 by default) and opens
    /// it for writing: exclusively (an existing file, or a symbolic link there, even a dangling
    /// one, is an error, not overwritten or followed), for files that hold device handles or
    /// other secrets.
    package static func createNew(_ path: String, mode: Int = 0o600) throws -> FileHandle {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode_t(mode))
        guard fd >= 0 else {
            let code = errno
            let reason =
                code == EEXIST
                ? "it exists (remove it, or choose another name)" : String(cString: strerror(code))
            throw HeraldTLSError(code: .fileSystem, message: "cannot create \(path): \(reason)")
        }
        // The mode asked for, whatever the umask.
        _ = fchmod(fd, mode_t(mode))
        return FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    /// Creates `directory` (and its missing parents) readable by this user only (0700), or, if it
    /// exists, takes away every right of other users on it (a directory an earlier release left
    /// at 0755 becomes 0700), so that nothing in it can be reached by another local user.
    package static func ensureDirectory(_ directory: String) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw HeraldTLSError(code: .fileSystem, message: "\(directory) exists and is not a directory")
            }
            try makePrivate(directory)
            return
        }
        do {
            try FileManager.default.createDirectory(
                atPath: directory,
                withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700]
            )
        } catch {
            throw HeraldTLSError(code: .fileSystem, message: "cannot create directory \(directory)")
        }
        try makePrivate(directory)
    }

    /// Takes the group's and other users' rights away from the file or directory at `path`.
    package static func makePrivate(_ path: String) throws {
        let fileManager = FileManager.default
        do {
            let mode = (try fileManager.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? 0
            guard mode & 0o077 != 0 else { return }
            try fileManager.setAttributes([.posixPermissions: mode & ~0o077], ofItemAtPath: path)
        } catch {
            throw HeraldTLSError(code: .fileSystem, message: "cannot make \(path) private to its user")
        }
    }

    /// The UTF-8 contents of `path`, or `nil` if there is no such file.
    package static func read(_ path: String) throws -> String? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else {
            throw HeraldTLSError(code: .fileSystem, message: "cannot read \(path)")
        }
        return text
    }
}

@inline(__always)
private func posixWrite(_ fd: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
    #if canImport(Darwin)
    return Darwin.write(fd, buffer, count)
    #elseif canImport(Musl)
    return Musl.write(fd, buffer, count)
    #else
    return Glibc.write(fd, buffer, count)
    #endif
}
