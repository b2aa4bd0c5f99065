/// Examples/MigrationTest, an app team's package depending on storelens by path.
enum LibraryExample {
    /// Its build folder, relative to the checkout (scripts/test.sh builds the same one, the command
    /// plugin's tool included).
    static let scratch = ".build/library-example"
}
