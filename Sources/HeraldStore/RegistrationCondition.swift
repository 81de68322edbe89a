import HeraldCore

/// What must hold for a registration write to go ahead: the rules of the device registry
/// that depend on what is stored, checked by the store in the write's own transaction.
public struct RegistrationCondition: Sendable, Hashable {
    /// The stored version must equal this; a missing registration never matches
    /// (``StoreError`` `versionMismatch`).
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

    /// What this condition refuses for the registration `id`, given what the store holds:
    /// `existingOwner` is `nil` when no registration has the id, `.some(owner)` when one does;
    /// `isIssued` says whether a live reservation holds the id (read when the id is not a
    /// registration and ``mustBeIssued`` is set). `nil` when the write may go ahead, before
    /// any version check, which the write itself makes. Every store implementation applies
    /// the rules in this one order.
    package func violation(id: String, existingOwner: String??, isIssued: Bool) -> (any Error)? {
        if let existingOwner {
            if let owner, existingOwner != owner { return HeraldError.forbidden("this registration belongs to another user") }
            return nil
        }
        if mustExist { return HeraldError.notFound("no registration with id \(id) to update") }
        if let ifVersion { return StoreError.versionMismatch("the registration does not have version \(ifVersion)") }
        if mustBeIssued, !isIssued {
            return HeraldError.gone("the registration id \(id) was not issued, or it expired or was deleted; ask for a new one")
        }
        return nil
    }
}
