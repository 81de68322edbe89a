import HeraldCore
import Testing

/// Reads every page of a keyset-paged registration read, `pageSize` at a time, checking that no
/// page is larger; the ids in the order read.
func allPagedIDs(pageSize: Int, _ read: (_ after: String?) async throws -> [Registration]) async throws -> [String] {
    var ids: [String] = []
    var cursor: String?
    while true {
        let page = try await read(cursor)
        #expect(page.count <= pageSize)
        ids += page.map(\.id)
        guard page.count == pageSize, let last = page.last else { break }
        cursor = last.id
    }
    return ids
}
