/// One page of a listing, and where the next one starts.
public struct Page<Element: Sendable>: Sendable {
    public var items: [Element]
    /// Pass it back to read the next page; `nil` on the last page.
    public var continuationToken: String?

    public init(items: [Element], continuationToken: String?) {
        self.items = items
        self.continuationToken = continuationToken
    }
}

extension Page: Equatable where Element: Equatable {}
extension Page: Hashable where Element: Hashable {}
