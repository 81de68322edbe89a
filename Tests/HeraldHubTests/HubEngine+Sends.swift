import Foundation
import HeraldCore
import HeraldHub

/// The sends the tests make, each one ``SendRequest`` built as the APIs build it (tag
/// expressions parsed where the request is made), so that the tests read as the kinds of send
/// they check.
extension HubEngine {
    func enqueue(tagExpression: String?, payloads: [PlatformPayload], scheduledAt: Date? = nil) async throws -> NotificationRecord {
        try await send(
            SendRequest(target: .tags(try Self.tags(tagExpression)), content: .native(payloads), options: .init(scheduledAt: scheduledAt))
        ).record
    }

    func enqueueTemplate(tagExpression: String?, send template: TemplateSend, scheduledAt: Date? = nil) async throws -> NotificationRecord {
        try await send(
            SendRequest(target: .tags(try Self.tags(tagExpression)), content: .template(template), options: .init(scheduledAt: scheduledAt))
        ).record
    }

    func enqueueDirect(payload: PlatformPayload, targets: [DirectTarget]) async throws -> NotificationRecord {
        try await send(SendRequest(target: .devices(targets), content: .native([payload]))).record
    }

    func testSend(
        tagExpression: String?, payloads: [PlatformPayload], template: TemplateSend?, limit: Int = 10, registrationID: String? = nil
    ) async throws -> SendResult {
        let target: SendRequest.Target =
            if let registrationID { .registration(registrationID) } else { .test(try Self.tags(tagExpression), limit: limit) }
        return try await send(SendRequest(target: target, content: template.map { .template($0) } ?? .native(payloads)))
    }

    /// A tag expression parsed as the hub API parses it (a `400` for a bad one).
    static func tags(_ text: String?) throws -> SendRequest.Tags? {
        do {
            return try text.map { text throws(TagExpressionSyntaxError) in try SendRequest.Tags(parsing: text) }
        } catch {
            throw error.heraldError
        }
    }
}
