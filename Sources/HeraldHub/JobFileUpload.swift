public import Foundation
import HeraldCore
import HeraldStore
import Logging

/// A job file streamed into the store (``HubEngine/beginJobFileUpload(name:)``): the bytes are
/// stored as they come, a chunk of ``JobChunk/uploadSize`` at a time, and become the file
/// only at ``commit(now:)``. The size limit (``HubEngine/Configuration/maxJobFileBytes``) and
/// the hub's job storage quota are checked before each chunk is stored; on a refusal the
/// caller calls ``discard()`` and nothing is left.
public struct JobFileUpload: Sendable {
    let engine: HubEngine
    public let name: String
    /// The size of the file this upload replaces: it does not count against the quota.
    let replacedBytes: Int
    let id = JobChunk.makeUploadID()
    private var pending = Data()
    private var sequence = 0
    /// Bytes received so far.
    public private(set) var size = 0

    init(engine: HubEngine, name: String, replacedBytes: Int) {
        self.engine = engine
        self.name = name
        self.replacedBytes = replacedBytes
    }

    /// Takes more bytes of the file; stores a chunk whenever one is full. Throws
    /// ``HeraldError/Code/payloadTooLarge`` past the largest file, and
    /// ``HeraldError/Code/forbidden`` past the hub's job storage quota.
    public mutating func append(_ bytes: some Collection<UInt8>) async throws {
        size += bytes.count
        let limit = engine.configuration.maxJobFileBytes
        guard size <= limit else {
            throw HeraldError.payloadTooLarge("a job file is at most \(limit) bytes (\(limit / 1024 / 1024) MiB); this one is larger")
        }
        pending.append(contentsOf: bytes)
        while pending.count >= JobChunk.uploadSize {
            try await storeChunk(pending.prefix(JobChunk.uploadSize))
            pending = Data(pending.dropFirst(JobChunk.uploadSize))
        }
    }

    /// Stores what is left and makes the upload the job file of its name.
    public mutating func commit(now: Date = Date()) async throws {
        if !pending.isEmpty {
            try await storeChunk(pending)
            pending = Data()
        }
        try await engine.store.commitJobFile(name: name, upload: id, now: now)
    }

    /// Deletes what was stored of an upload that will not be committed. Never throws: what it
    /// cannot delete now, the retention sweep deletes later.
    public func discard() async {
        do {
            try await engine.store.discardJobFileUpload(id)
        } catch {
            engine.logger.warning("Could not delete a refused upload; the job sweep will", metadata: ["error": "\(error)"])
        }
    }

    private mutating func storeChunk(_ chunk: Data) async throws {
        // What is stored of this upload counts already; the file it replaces does not.
        try await engine.checkJobStorage(adding: chunk.count, releasing: replacedBytes)
        try await engine.store.appendJobFileChunk(upload: id, sequence: sequence, bytes: chunk, now: Date())
        sequence += 1
    }
}

/// A job file as stored, in chunks, read one at a time: a download streams them
/// (``HubEngine/jobFileContents(named:)``).
public struct JobFileContents: Sendable {
    let chunks: [JobChunk]
    let read: @Sendable (Int) async throws -> Data?

    init(chunks: [JobChunk], read: @escaping @Sendable (Int) async throws -> Data?) {
        self.chunks = chunks
        self.read = read
    }

    /// The file's size, in bytes.
    public var size: Int { chunks.reduce(0) { $0 + $1.size } }

    /// Hands each chunk to `body`, in order. Throws ``HeraldError/Code/gone`` if a chunk is
    /// no longer there (the file was replaced, or deleted by the retention sweep, meanwhile).
    public func forEachChunk(_ body: (Data) async throws -> Void) async throws {
        for chunk in chunks {
            guard let bytes = try await read(chunk.sequence) else {
                throw HeraldError.gone("the job file was replaced or deleted while it was read")
            }
            try await body(bytes)
        }
    }
}
