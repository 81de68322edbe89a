package import HeraldCore

/// A notification accepted before under the same idempotency key and the same request:
/// what a repeat of the send answers, instead of sending again
/// (``NotificationStore/enqueueNotification(_:idempotencyKey:)``).
public struct IdempotentReplay: Sendable, Hashable {
    /// The notification the first request created.
    public var notificationID: String
    /// What the first answer carried beside the notification (``IdempotencyKey/answer``).
    public var answer: String?

    public init(notificationID: String, answer: String?) {
        self.notificationID = notificationID
        self.answer = answer
    }
}

extension IdempotencyKey {
    /// What a store answers when it finds this key held by the notification `id`, sent with
    /// the request whose digest is `storedDigest`: a replay if it is this request, otherwise
    /// ``StoreError/Code/idempotencyKeyReused``. One rule for every store.
    package func replay(of id: String, storedDigest: String, answer: String?) throws(StoreError) -> IdempotentReplay {
        guard storedDigest == digest else { throw StoreError.idempotencyKeyReused(key) }
        return IdempotentReplay(notificationID: id, answer: answer)
    }
}
