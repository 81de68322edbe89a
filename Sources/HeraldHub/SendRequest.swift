public import Foundation
public import HeraldCore

/// What enters the engine: whom to send to, what, and how. Every API — the hub REST API, the
/// app backend, the console, the command line — builds one, and ``HubEngine/send(_:)``
/// validates it once, stores it and has it delivered.
public struct SendRequest: Sendable {
    /// Whom a send reaches.
    public enum Target: Sendable {
        /// The registrations whose tags match the expression; `nil` for every registration (a
        /// broadcast).
        case tags(Tags?)
        /// Every device of one user of the app backend: the registrations tagged
        /// `username:<name>`.
        case user(String)
        /// The given devices, whether or not a registration holds them: 1 to
        /// ``HubEngine/directTargetLimit``, all on the platform of the one native payload.
        case devices([DirectTarget])
        /// One registration, by id, sent to at once with its outcome reported (a console's
        /// "test send to this device").
        case registration(String)
        /// A test: sent at once, not through the queue, to at most `limit` (1 to
        /// ``SendRequest/testLimit``) of the registrations the expression targets, with each
        /// one's outcome reported.
        case test(Tags?, limit: Int)
    }

    /// A tag expression as its sender wrote it, parsed once, where the request is built.
    public struct Tags: Sendable, Hashable {
        /// The text, kept with the notification and shown to its senders.
        public let text: String
        public let expression: TagExpression

        /// - Throws: what is wrong in the expression, for the caller to word
        ///   (``TagExpressionSyntaxError/heraldError`` says it as a `400`).
        public init(parsing text: String) throws(TagExpressionSyntaxError) {
            expression = try TagExpression(parsing: text)
            self.text = text
        }
    }

    /// What a send carries.
    public enum Content: Sendable {
        /// One payload per platform, in the push services' own formats; only registrations on
        /// those platforms are reached, native ones only.
        case native([PlatformPayload])
        /// Properties that each template registration's template is rendered with (and
        /// optionally the one template to use); only template registrations are reached.
        case template(TemplateSend)
    }

    /// How a send is delivered.
    public struct Options: Sendable {
        /// When delivery may start; a future time keeps the notification
        /// ``NotificationState/scheduled`` until then. `nil` (or a past time) for at once.
        public var scheduledAt: Date?
        /// How long the push services keep the notification for a device that is offline:
        /// Web Push `TTL`, WNS `X-WNS-TTL`, APNs `apns-expiration`, unless a native payload
        /// sets its own.
        public var timeToLive: Duration?
        /// The Web Push `Urgency` (`very-low`, `low`, `normal`, `high`), unless the payload
        /// sets its own.
        public var urgency: String?
        /// How urgently the push services should deliver, unless the payload says so itself:
        /// APNs `apns-priority`, FCM `android.priority`, Web Push `Urgency`.
        public var priority: Priority?
        /// Notifications with the same collapse id replace one another on a device that has not
        /// shown them yet: APNs `apns-collapse-id`, FCM `android.collapse_key`, WNS `X-WNS-Tag`,
        /// Web Push `Topic`, unless the payload sets its own.
        public var collapseID: String?
        /// The `Idempotency-Key` the send was made under: a repeat of the same request with the
        /// same key, within the key's retention, answers the notification the first one
        /// created and sends nothing (``SendResult/replay``). `nil` for a send without a key.
        /// Sends through the queue only: a test send, delivered at once, takes none.
        public var idempotencyKey: IdempotencyKey?
        /// How long to spread the notification's sends over, from when its delivery starts, so
        /// that its devices get it evenly over that time rather than at once (a large
        /// notification whose opens would flood the app's servers): whole seconds, from 1 s to
        /// less than the hub's ``HubEngine/Configuration/abandonAfter``. `nil` for as fast as
        /// the send budgets allow. Sends through the queue only.
        public var spread: Duration?

        public init(
            scheduledAt: Date? = nil, timeToLive: Duration? = nil, urgency: String? = nil, priority: Priority? = nil,
            collapseID: String? = nil, idempotencyKey: IdempotencyKey? = nil, spread: Duration? = nil
        ) {
            self.scheduledAt = scheduledAt
            self.timeToLive = timeToLive
            self.urgency = urgency
            self.priority = priority
            self.collapseID = collapseID
            self.idempotencyKey = idempotencyKey
            self.spread = spread
        }
    }

    /// A send's delivery priority, as each push service words it.
    public enum Priority: String, Sendable, CaseIterable {
        /// Delivered at once, waking the device: APNs 10, FCM `HIGH`, Web Push `high`.
        case high
        /// Delivered when the device's power allows: APNs 5, FCM `NORMAL`, Web Push `normal`.
        case normal
        /// Power first: APNs 1, FCM `NORMAL`, Web Push `low`.
        case low

        /// `high`, `normal` or `low`, in any case.
        public init(parsing text: String) throws(HeraldError) {
            guard let priority = Self(rawValue: text.trimmingSpaces().lowercased()) else {
                throw .badRequest("a priority is high, normal or low, not '\(text)'")
            }
            self = priority
        }
    }

    /// The most registrations a test send reaches (the established hub's limit).
    public static let testLimit = 10

    public var target: Target
    public var content: Content
    public var options: Options

    public init(target: Target, content: Content, options: Options = Options()) {
        self.target = target
        self.content = content
        self.options = options
    }
}
