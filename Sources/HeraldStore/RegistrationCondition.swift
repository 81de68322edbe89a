/// What must hold for a registration write to go ahead: the rules of the device registry
/// that depend on what is stored, checked by the store in the write's own transaction.
public struct RegistrationCondition: Sendable, Hashable {
    /// The stored version must equal this; a missing registration never matches
    /// (`preconditionFailed`).
    public var ifVersion: Int?
    /// The registration must exist already (`notFound`, checked before the version): an
    /// update, never a create.
    public var mustExist: Bool
    /// A new registration's id must have been issued (reserved) and not have expired or been
    /// deleted since (`gone`). An existing registration passes.
    public var mustBeIssued: Bool
    /// An existing registration must belong to this owner (`forbidden`); `nil` checks no owner.
    public var owner: String?
    /// After the write, the other registrations of the same platform and handle are deleted
    /// (those derived from installations aside): one device, one registration.
    public var replacesOtherRegistrationsOfHandle: Bool

    public init(
        ifVersion: Int? = nil,
        mustExist: Bool = false,
        mustBeIssued: Bool = false,
        owner: String? = nil,
        replacesOtherRegistrationsOfHandle: Bool = false
    ) {
        self.ifVersion = ifVersion
        self.mustExist = mustExist
        self.mustBeIssued = mustBeIssued
        self.owner = owner
        self.replacesOtherRegistrationsOfHandle = replacesOtherRegistrationsOfHandle
    }

    /// No condition: the write always goes ahead.
    public static let none = RegistrationCondition()

    /// Whether the write needs no look at what is stored: it can be batched with others.
    package var isUnconditional: Bool {
        ifVersion == nil && !mustExist && !mustBeIssued && owner == nil && !replacesOtherRegistrationsOfHandle
    }
}
