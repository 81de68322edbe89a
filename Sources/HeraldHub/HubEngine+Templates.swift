public import Foundation
public import HeraldCore

extension HubEngine {
    /// Validates and durably accepts a template notification: each matching template
    /// registration receives its own template rendered with its push variables overridden by
    /// `send.properties`. Native registrations are not reached.
    ///
    /// - Parameters:
    ///   - tagExpression: whom to send to; `nil` broadcasts to every template registration.
    ///   - send: the properties, and optionally the name of the one template to use.
    ///   - scheduledAt: when delivery may start; `nil` (or a past time) for at once.
    public func enqueueTemplate(
        tagExpression: String?,
        send: TemplateSend,
        scheduledAt: Date? = nil
    ) async throws -> NotificationRecord {
        try Self.checkTagExpression(tagExpression)
        try Self.check(send)
        let record = NotificationRecord(
            id: Self.newNotificationID(),
            tagExpression: tagExpression,
            payloads: [],
            template: send,
            scheduledAt: scheduledAt,
            state: Self.initialState(scheduledAt: scheduledAt)
        )
        return try await accept(record)
    }

    static func check(_ send: TemplateSend) throws(HeraldError) {
        if let name = send.templateName {
            guard !name.isEmpty, name.count <= 200 else {
                throw .badRequest("a template name has 1 to 200 characters; this one has \(name.count)")
            }
        }
        for name in send.properties.keys.sorted() where name.isEmpty {
            throw .badRequest("a template property needs a name; one of the properties has an empty name")
        }
    }
}
