import Foundation
import HeraldCore
package import NIOCore
import NIOPosix

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The files of rich content: one per upload, named after its id, readable by the server's
/// user only (mode 0600, directory 0700).
///
/// An upload streams into a temporary file in the same directory (`.upload-<id>`), which
/// is moved into place once complete; a failed or refused upload leaves nothing behind.
/// File I/O runs on the NIO thread pool.
package struct RichContentFiles: Sendable {
    package let directory: String
    static let uploadPrefix = ".upload-"

    package init(directory: String) {
        self.directory = directory
    }

    package func path(for id: String) -> String {
        directory + "/" + id
    }

    /// Streams `body` into the file for `id` and returns its size. Throws `413` as soon as
    /// more than `limit` bytes arrived, `400` for an empty body; removes the partial file on
    /// any error.
    package func store<Body: AsyncSequence>(_ body: Body, id: String, limit: Int) async throws -> Int where Body.Element == ByteBuffer {
        let threadPool = NIOThreadPool.singleton
        let directory = self.directory
        let temporary = directory + "/" + Self.uploadPrefix + id
        let final = path(for: id)
        let fd = try await threadPool.runIfActive { () throws -> Int32 in
            try FileManager.default.createDirectory(
                atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
            )
            let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(0o600))
            guard fd >= 0 else { throw HeraldError(code: .internalError, message: "cannot store the content") }
            return fd
        }
        var size = 0
        do {
            for try await chunk in body {
                size += chunk.readableBytes
                guard size <= limit else {
                    throw HeraldError.payloadTooLarge("the content is larger than the \(limit) bytes this server accepts")
                }
                try await threadPool.runIfActive { try Self.writeAll(chunk, to: fd) }
            }
            guard size > 0 else { throw HeraldError.badRequest("the request body is empty; send the content") }
            try await threadPool.runIfActive {
                guard fsync(fd) == 0 else { throw HeraldError(code: .internalError, message: "cannot store the content") }
            }
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        close(fd)
        do {
            try await threadPool.runIfActive {
                guard rename(temporary, final) == 0 else {
                    throw HeraldError(code: .internalError, message: "cannot store the content")
                }
            }
        } catch {
            unlink(temporary)
            throw error
        }
        return size
    }

    private static func writeAll(_ chunk: ByteBuffer, to fd: Int32) throws {
        try chunk.withUnsafeReadableBytes { raw in
            var written = 0
            while written < raw.count {
                let n = write(fd, raw.baseAddress! + written, raw.count - written)
                if n < 0 {
                    if errno == EINTR { continue }
                    throw HeraldError(code: .internalError, message: "cannot store the content")
                }
                written += n
            }
        }
    }

    /// Removes the files of `ids`; a file that is already gone is not an error.
    func remove(ids: [String]) async throws {
        guard !ids.isEmpty else { return }
        let paths = ids.filter(ContentID.isWellFormed).map(path(for:))
        try await NIOThreadPool.singleton.runIfActive {
            for path in paths { unlink(path) }
        }
    }

    /// Removes temporary upload files older than `age` (left by a crash during an upload).
    @discardableResult
    func removeAbandonedUploads(olderThan age: TimeInterval, now: Date) async throws -> Int {
        let directory = self.directory
        return try await NIOThreadPool.singleton.runIfActive {
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return 0 }
            var removed = 0
            for name in names where name.hasPrefix(Self.uploadPrefix) {
                let path = directory + "/" + name
                guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date,
                    now.timeIntervalSince(modified) > age
                else { continue }
                if unlink(path) == 0 { removed += 1 }
            }
            return removed
        }
    }
}
