package view

// SectionID is the id of a component's section on the HTML page, which its
// node in the graph links to.
func SectionID(component string) string { return anchorID("c", component) }
