import Foundation
import StoreFormats
import Testing
@testable import Acquisition

/// Which errors are storelens' own working-folder failures, and what their sentence says happened.
@Suite("WorkingFolderFailure.from")
struct WorkingFolderFailureFromTests {
    @Test("an image that cannot be written or whose working-copy source cannot be read is ours, and says which")
    func imageFailures() throws {
        let written = try #require(WorkingFolderFailure.from(DatabaseImageError.writeFailed(path: "/w/commit-3.sqlite", code: EIO, bytes: 4096)))
        #expect(!written.whileReading && written.neededBytes == 4096)
        #expect(written.description.hasPrefix("writing in the working folder"))
        let read = try #require(WorkingFolderFailure.from(DatabaseImageError.sourceReadFailed(path: "/w/copy/default.store", code: EIO)))
        #expect(read.whileReading && read.code == EIO && read.neededBytes == nil)
        #expect(read.description.hasPrefix("reading in the working folder"), "\(read)")
        #expect(read.description.contains("not a finding about the evidence"))
        // The evidence's own damage is not ours.
        #expect(WorkingFolderFailure.from(DatabaseImageError.imageHeaderInvalid(.notSQLite)) == nil)
    }
}
