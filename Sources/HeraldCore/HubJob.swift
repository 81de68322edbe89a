public import Foundation

/// A bulk operation on a hub's registrations, the cloud hub's `NotificationHubJob`: an export
/// of every registration, or an import of a file of registration descriptions, one a line.
///
/// A job is submitted (``State/started``), claimed by a worker (``State/running``), and ends
/// ``State/completed`` — lines that could not be applied are counted and listed in its
/// failures file, and do not fail the job — or ``State/failed`` when it could not run at all
/// (its input is missing, say), with ``failure`` saying why.
public struct HubJob: Sendable, Hashable, Codable, Identifiable {
    /// What a job does; the raw values are the cloud hub's `Type` values.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case exportRegistrations = "ExportRegistrations"
        case importCreateRegistrations = "ImportCreateRegistrations"
        case importUpdateRegistrations = "ImportUpdateRegistrations"
        case importUpsertRegistrations = "ImportUpsertRegistrations"
        case importDeleteRegistrations = "ImportDeleteRegistrations"

        /// The import mode, `nil` for an export.
        public var importMode: RegistrationImportMode? {
            switch self {
            case .exportRegistrations: nil
            case .importCreateRegistrations: .create
            case .importUpdateRegistrations: .update
            case .importUpsertRegistrations: .upsert
            case .importDeleteRegistrations: .delete
            }
        }

        /// The kind of a `Type` value, compared without regard to case.
        public init?(wireName: String) {
            let trimmed = wireName.trimmingWhitespace()
            guard let kind = Self.allCases.first(where: { $0.rawValue.caseInsensitiveCompare(trimmed) == .orderedSame }) else {
                return nil
            }
            self = kind
        }
    }

    /// Where a job is; the raw values are the cloud hub's `Status` values.
    public enum State: String, Sendable, Hashable, Codable {
        case started = "Started"
        case running = "Running"
        case completed = "Completed"
        case failed = "Failed"

        public var isFinished: Bool { self == .completed || self == .failed }
    }

    /// A random id, such as `7f3c…` (32 hexadecimal digits).
    public var id: String
    public var kind: Kind
    public var state: State
    /// Lines (or, for an export, registrations) dealt with so far.
    public var processed: Int
    /// Lines of the input, or registrations to export, when known; `nil` before the job starts.
    public var total: Int?
    /// Lines applied (or registrations exported).
    public var succeeded: Int
    /// Lines that could not be applied; each is listed in the failures file.
    public var failed: Int
    /// Where a resumed export goes on: the last registration id written.
    public var cursor: String?
    /// For an import, the name of its input file in the hub's job files.
    public var inputFile: String?
    /// Why the job failed as a whole; `nil` unless ``State/failed``.
    public var failure: String?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: String = HubJob.makeID(),
        kind: Kind,
        state: State = .started,
        processed: Int = 0,
        total: Int? = nil,
        succeeded: Int = 0,
        failed: Int = 0,
        cursor: String? = nil,
        inputFile: String? = nil,
        failure: String? = nil,
        createdAt: Date = Date(),
        updatedAt: Date = Date()
    ) {
        self.id = id
        self.kind = kind
        self.state = state
        self.processed = processed
        self.total = total
        self.succeeded = succeeded
        self.failed = failed
        self.cursor = cursor
        self.inputFile = inputFile
        self.failure = failure
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Progress in percent, 0–100: 100 once finished.
    public var progress: Double {
        if state.isFinished { return 100 }
        guard let total, total > 0 else { return 0 }
        return min(100, (Double(processed) * 100 / Double(total) * 100).rounded() / 100)
    }

    /// A new random job id: 128 bits as 32 hexadecimal digits.
    public static func makeID() -> String {
        var generator = SystemRandomNumberGenerator()
        return (0..<4).map { _ in
            let word = UInt32.random(in: .min ... .max, using: &generator)
            let hex = String(word, radix: 16)
            return String(repeating: "0", count: 8 - hex.count) + hex
        }.joined()
    }

    /// The name of a job's output file in the hub's job files (`<id>/Output.txt`): the
    /// exported registrations, or one line per line applied.
    public static func outputFileName(jobID: String) -> String { "\(jobID)/\(outputFile)" }
    /// The name of a job's failures file (`<id>/Failed.txt`): one line per line not applied.
    public static func failuresFileName(jobID: String) -> String { "\(jobID)/\(failuresFile)" }

    public static let outputFile = "Output.txt"
    public static let failuresFile = "Failed.txt"

    /// Whether `name` may name a job file that is uploaded: 1–128 letters, digits, `-`, `_`
    /// and `.`, not starting with `.`.
    public static func isValidFileName(_ name: String) -> Bool {
        guard (1...128).contains(name.utf8.count), !name.hasPrefix(".") else { return false }
        return name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."):
                true
            default: false
            }
        }
    }
}

/// How an import applies each registration of its file.
public enum RegistrationImportMode: String, Sendable, Hashable, CaseIterable {
    /// Creates registrations: under the line's `RegistrationId` when it has one (a line whose id
    /// exists with other content fails), under a new id otherwise. A registration the hub already
    /// has as it is (the same id, or no id and the same device and template) is left alone, so
    /// importing a file twice changes nothing the second time.
    case create
    /// Replaces registrations that exist (`RegistrationId` required; a missing one fails the line).
    case update
    /// Creates or replaces by `RegistrationId`; a line without one is created as by ``create``.
    case upsert
    /// Deletes registrations by `RegistrationId`; one already gone counts as done.
    case delete
}
