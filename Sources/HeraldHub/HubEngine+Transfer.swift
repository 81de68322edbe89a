public import Foundation
public import HeraldCore
import HeraldHubWire
import HeraldStore
import Logging

/// What became of one line of an import file.
public struct RegistrationImportOutcome: Sendable, Hashable {
    /// The line's number in the file, from 1.
    public var line: Int
    /// The registration the line concerned, when it named or made one.
    public var registrationID: String?
    /// What was done (`created`, `updated`, `deleted`, `unchanged`, `already deleted`); `nil`
    /// when the line failed.
    public var action: String?
    /// Why the line failed; `nil` when it was applied. Nothing changed for a failed line.
    public var error: String?

    public var succeeded: Bool { error == nil }

    /// The line of the job's output file (`line 3: created 8017…`) or failures file
    /// (`line 4: BodyTemplate: …`).
    public var report: String {
        if let error { return "line \(line): \(error)" }
        return "line \(line): \(action ?? "done")" + (registrationID.map { " \($0)" } ?? "")
    }
}

/// Export and import of registrations, one registration description a line, in the cloud
/// hub's file format (``RegistrationDescription/line(_:)``). The command line (`herald hub
/// export`, `herald hub import`) and the hub API's jobs both go through here, line by line.
extension HubEngine {
    /// The lines of an import file: split at line feeds (a carriage return before one is
    /// dropped), the final empty line after a last line feed left out. Blank lines are kept,
    /// so that numbers match the file; ``importRegistration(line:number:mode:)`` skips them.
    public static func importLines(_ data: Data) -> [Substring] {
        var text = String(decoding: data, as: UTF8.self)
        if text.hasPrefix("\u{FEFF}") { text.removeFirst() }
        // "\r\n" is one Character: split at it as at a lone line feed.
        var lines = text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" })
        if lines.last?.isEmpty == true { lines.removeLast() }
        return lines.map { $0.hasSuffix("\r") ? $0.dropLast() : $0 }
    }

    /// Applies one line of an import file in `mode`; `nil` for a blank line.
    ///
    /// A line that cannot be applied — malformed, an invalid registration or template, a
    /// registration that is not there to update — comes back with ``RegistrationImportOutcome/error``
    /// and changes nothing. Applying a line twice changes nothing the second time (see
    /// ``RegistrationImportMode``).
    ///
    /// - Throws: only when the store cannot be reached or fails (the line may then be applied
    ///   again later).
    public func importRegistration(
        line text: some StringProtocol, number: Int, mode: RegistrationImportMode
    ) async throws
        -> RegistrationImportOutcome?
    {
        let trimmed = text.trimmingSpaces()
        guard !trimmed.isEmpty else { return nil }
        var outcome = RegistrationImportOutcome(line: number)
        do {
            let registration = try RegistrationDescription.parse(Data(trimmed.utf8))
            outcome.registrationID = registration.id.isEmpty ? nil : registration.id
            if mode != .delete { try check(registration) }
            let (id, action) = try await apply(registration, mode: mode)
            outcome.registrationID = id
            outcome.action = action
        } catch let error as HeraldError where error.code != .internalError {
            outcome.error = error.message
        }
        return outcome
    }

    private func apply(_ registration: Registration, mode: RegistrationImportMode) async throws -> (id: String, action: String) {
        let id = registration.id
        switch mode {
        case .delete:
            guard !id.isEmpty else { throw HeraldError.badRequest("RegistrationId is required to delete a registration") }
            return (id, try await deleteRegistration(id: id) ? "deleted" : "already deleted")
        case .update:
            guard !id.isEmpty else { throw HeraldError.badRequest("RegistrationId is required to update a registration") }
            do {
                _ = try await store.upsertRegistration(registration, when: RegistrationCondition(mustExist: true))
            } catch let error as HeraldError where error.code == .notFound {
                throw HeraldError.notFound("no registration with id \(id) to update; ImportCreateRegistrations or ImportUpsertRegistrations creates it")
            }
            return (id, "updated")
        case .upsert where !id.isEmpty:
            if let existing = try await store.registration(id: id), existing.installationID == nil, Self.sameContent(existing, registration) {
                return (id, "unchanged")
            }
            let saved = try await store.upsertRegistration(registration, when: .none)
            return (id, saved.version == 1 ? "created" : "updated")
        case .create where !id.isEmpty:
            if let existing = try await store.registration(id: id) {
                guard existing.installationID == nil, Self.sameContent(existing, registration) else {
                    throw HeraldError.conflict(
                        "a registration with id \(id) exists with other content; ImportUpdateRegistrations or ImportUpsertRegistrations replaces it"
                    )
                }
                return (id, "unchanged")
            }
            _ = try await store.upsertRegistration(registration, when: .none)
            return (id, "created")
        case .create, .upsert:
            // No id: a registration of that device with the same content is this one, already
            // made (by an earlier run of the same file, say).
            let existing = try await store.registrations(handle: registration.handle, platform: registration.platform)
            if let same = existing.first(where: { $0.installationID == nil && Self.sameContent($0, registration) }) {
                return (same.id, "unchanged")
            }
            return (try await createRegistration(registration).id, "created")
        }
    }

    /// Whether two registrations say the same (ids, versions, owners and dates aside).
    static func sameContent(_ a: Registration, _ b: Registration) -> Bool {
        let expiry: Bool =
            switch (a.expiresAt, b.expiresAt) {
            case (nil, nil): true
            case (let x?, let y?): abs(x.timeIntervalSince(y)) < 0.001
            default: false
            }
        return expiry && a.platform == b.platform && a.handle == b.handle && a.webPushKeys == b.webPushKeys && a.tags == b.tags
            && a.template == b.template && a.pushVariables == b.pushVariables && a.legacyGCM == b.legacyGCM
    }

    /// Brings the store's statistics of the registrations up to date after an import
    /// (``HeraldStore/refreshStatistics()``), so that the next broadcast is planned for the
    /// registrations the import left. A failure is logged, not thrown: the import itself is done.
    public func importFinished(changed: Int) async {
        guard changed > 0 else { return }
        do {
            try await store.refreshStatistics()
        } catch {
            logger.warning("Could not bring the store's statistics up to date after an import", metadata: ["error": "\(error)"])
        }
    }

    /// One page of the registrations an export writes, in id order after `cursor`: every
    /// registration made through the hub API or the app backend (an installation's are read
    /// through the installation, as in listings).
    public func exportPage(after cursor: String?, limit: Int) async throws -> [Registration] {
        try await store.listRegistrations(RegistrationFilter(), after: cursor, limit: limit)
    }
}
