package ipvs

// ValidateService reports whether s may be added or updated as it is: the
// checks Batch.AddService and Batch.UpdateService make, as a
// *ValidationError naming the field and value at fault. Package ipvsadm
// uses it to refuse a saved table the kernel would refuse.
func ValidateService(s Service) error { return validateService(s) }

// ValidateDestination reports whether d may be added to, or updated in, the
// service k as it is: the checks Batch.AddDestination makes.
func ValidateDestination(k ServiceKey, d Destination) error { return validateDest(k, d) }
