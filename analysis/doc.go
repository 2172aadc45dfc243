// Package analysis holds the logic of DCPI's tools — dcpiprof, dcpilist,
// dcpicalc, dcpistats, dcpidiff — and pprof export, as pure functions over
// read interfaces of the profile database and the uploaded images.
//
// Status: issues 5 and 6; this package holds nothing yet.
package analysis
