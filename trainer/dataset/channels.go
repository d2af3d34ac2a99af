/*
Copyright 2026 The espo-operator Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package dataset

// reveal says how the demonstrated GUI steps reveal a preference.
type reveal int

const (
	// byQuery: the user types the value into the search box.
	byQuery reveal = iota
	// byFilter: the user clicks the value's filter chip on the results page.
	byFilter
	// byPage: the user opens the dimension's page (its opener button on the results
	// page) and clicks the value there.
	byPage
)

// dim is one attribute of a channel's items, and a possible preference.
type dim struct {
	key    string
	label  string // the opener's text, for byPage
	reveal reveal
	values []string
	// atLeast: values are in increasing order and an item fits a preference for v
	// when its value is v or a later one; otherwise it fits only v itself.
	atLeast bool
	// phrases state the preference in the requirement; %s is the value.
	phrases []string
	// lower: the value is written in lower case inside a phrase.
	lower bool
}

// channelSpec describes one SmartSpot channel: its app, its items, and the shape
// of its episodes.
type channelSpec struct {
	name, app, noun string
	// guiMean is the published mean number of GUI steps; an episode has
	// floor(guiMean) + Bernoulli(frac(guiMean)) + U{-guiSpread..guiSpread} of them.
	guiMean   float64
	guiSpread int
	// recMin and recMax bound the number of recommend steps (uniform).
	recMin, recMax int
	// dims[0] is the search query; a user has a preference for it and for
	// prefMin..prefMax of the others.
	dims             []dim
	prefMin, prefMax int
	// instructions are the vague requests, 13-24 words; those with %s name the
	// query value (used with probability revealQuery).
	instructions []string
	revealQuery  float64
	leads        []string // the requirement's first sentence
	categories   []string // home page shortcuts
	nameA, nameB []string // item names: nameA[i] + " " + nameB[j]
	sorts        []string
}

// closings end a requirement, to say what a fit means (and to reach 19 words).
var closings = []string{
	"Only suggest options that match all of these points.",
	"Anything that misses one of these is not for me.",
	"Please keep all of these in mind when choosing.",
}

// channels are the six SmartSpot channels, in the published order. GUI step means:
// SmartAgent's table (TRAVEL1 17.3 and TRAVEL2 21.3, averaged to 19.3); the
// recommend ranges lie within the published 4-7.
var channels = []*channelSpec{
	{
		name: "food", app: "FoodSpot", noun: "restaurant",
		guiMean: 7.0, guiSpread: 1, recMin: 4, recMax: 6,
		dims: []dim{
			{key: "cuisine", reveal: byQuery, values: []string{"Sichuan", "Cantonese", "Japanese", "Korean", "Italian", "Mexican", "Thai", "Vegetarian", "Seafood", "Hotpot"},
				phrases: []string{"I'm craving %s food", "I want to eat %s tonight"}},
			{key: "price", reveal: byFilter, values: []string{"$10-20", "$20-40", "$40-80", "$80+"},
				phrases: []string{"spending about %s per person", "with a budget of %s per person"}},
			{key: "rating", reveal: byFilter, atLeast: true, values: []string{"3.5+", "4.0+", "4.5+"},
				phrases: []string{"rated %s by other diners", "with a rating of %s"}},
			{key: "area", label: "Location", reveal: byPage, values: []string{"Downtown", "Riverside", "Old Town", "University District", "Harbor", "Midtown"},
				phrases: []string{"somewhere in %s", "close to %s"}},
			{key: "feature", reveal: byFilter, lower: true, values: []string{"Outdoor seating", "Private rooms", "Late hours", "Kids menu"},
				phrases: []string{"ideally with %s", "a place that offers %s"}},
		},
		prefMin: 2, prefMax: 3,
		instructions: []string{
			"I'm starving after a long day at work, can you find me a good place to eat tonight?",
			"My friends are coming over later and we want to go out for dinner, any ideas nearby?",
			"I really feel like %s food tonight, could you find me somewhere nice to eat around here?",
			"Help me pick a restaurant for tonight, I have been thinking about %s food all day long.",
			"Find me somewhere good to eat tonight, I am really hungry right now.",
			"We have a small celebration this evening and I have no idea where to go, could you suggest a restaurant we would all enjoy?",
		},
		revealQuery: 0.5,
		leads:       []string{"I am looking for a restaurant for dinner tonight.", "I want to find a good place to eat nearby."},
		categories:  []string{"Nearby", "Deals", "Top rated", "Takeout"},
		nameA:       []string{"Golden", "Jade", "Red", "Little", "Old", "Happy", "Lucky", "Silver", "Green", "Royal"},
		nameB:       []string{"Dragon", "Garden", "Lantern", "Bowl", "Kitchen", "House", "Table", "Spoon"},
		sorts:       []string{"Recommended", "Distance", "Rating", "Price"},
	},
	{
		name: "hotel", app: "StayFinder", noun: "hotel",
		guiMean: 11.0, guiSpread: 2, recMin: 5, recMax: 7,
		dims: []dim{
			{key: "city", reveal: byQuery, values: []string{"New York", "London", "Tokyo", "Paris", "Shanghai", "Singapore", "Sydney", "Barcelona"},
				phrases: []string{"I am staying in %s", "I need a place in %s"}},
			{key: "stars", reveal: byFilter, atLeast: true, values: []string{"3-star", "4-star", "5-star"},
				phrases: []string{"at least a %s hotel", "a %s hotel or better"}},
			{key: "price", reveal: byFilter, values: []string{"Under $100", "$100-200", "$200-350", "$350+"},
				phrases: []string{"paying %s a night", "priced %s per night"}},
			{key: "area", label: "Area", reveal: byPage, lower: true, values: []string{"City center", "Airport", "Riverside", "Business district", "Train station"},
				phrases: []string{"near the %s", "close to the %s"}},
			{key: "amenity", reveal: byFilter, lower: true, values: []string{"Free breakfast", "Swimming pool", "Gym", "Free parking", "Spa"},
				phrases: []string{"with %s", "that has %s"}},
			{key: "room", label: "Room type", reveal: byPage, lower: true, values: []string{"King bed", "Twin beds", "Suite", "Sea view"},
				phrases: []string{"a %s room", "booking a %s room"}},
		},
		prefMin: 2, prefMax: 4,
		instructions: []string{
			"I'm going to %s next week for a few days, can you help me find a hotel?",
			"Work is sending me to %s soon and I still have nowhere to stay, any good hotel?",
			"We are planning a short holiday in %s, could you look for a place for us to stay?",
			"Heading to %s next month, please find me a decent hotel to stay.",
			"My parents and I are visiting %s for a long weekend soon and we still need somewhere comfortable to sleep, any suggestions?",
		},
		revealQuery: 1,
		leads:       []string{"I need a hotel for my upcoming trip.", "I am booking a hotel for a few nights."},
		categories:  []string{"Hotels", "Homestays", "Deals", "Nearby"},
		nameA:       []string{"Grand", "Park", "Harbor", "Royal", "Urban", "Blue", "Central", "Garden", "Silver", "Maple"},
		nameB:       []string{"Hotel", "Inn", "Suites", "Residence", "Lodge", "Plaza", "Tower"},
		sorts:       []string{"Recommended", "Price low to high", "Rating", "Distance"},
	},
	{
		name: "flight", app: "FlyNow", noun: "flight",
		guiMean: 9.2, guiSpread: 1, recMin: 4, recMax: 6,
		dims: []dim{
			{key: "destination", reveal: byQuery, values: []string{"Beijing", "Tokyo", "Seoul", "Bangkok", "London", "Paris", "Dubai", "Los Angeles"},
				phrases: []string{"I am flying to %s", "I need a flight to %s"}},
			{key: "time", reveal: byFilter, lower: true, values: []string{"Morning", "Afternoon", "Evening", "Red-eye"},
				phrases: []string{"with a %s departure", "leaving with a %s departure"}},
			{key: "stops", reveal: byFilter, lower: true, values: []string{"Nonstop", "1 stop", "2+ stops"},
				phrases: []string{"on a %s flight", "taking a %s route"}},
			{key: "cabin", label: "Cabin", reveal: byPage, lower: true, values: []string{"Economy", "Premium economy", "Business", "First"},
				phrases: []string{"in %s class", "seated in %s class"}},
			{key: "airline", label: "Airline", reveal: byPage, values: []string{"Air China", "Delta", "Emirates", "Lufthansa", "ANA", "Singapore Airlines"},
				phrases: []string{"flying with %s", "on %s"}},
			{key: "price", reveal: byFilter, values: []string{"Under $300", "$300-600", "$600-1000", "$1000+"},
				phrases: []string{"for %s", "with a fare of %s"}},
		},
		prefMin: 2, prefMax: 3,
		instructions: []string{
			"I have to be in %s by the end of next week, can you sort out a flight?",
			"I want to visit %s soon and need to get there somehow, please find me a flight.",
			"My family lives in %s and I would like to fly home for a visit, any good options?",
			"Please get me on a plane to %s sometime next week if possible.",
			"I have a conference in %s at the end of the month and need to sort out how to get there, any flights?",
		},
		revealQuery: 1,
		leads:       []string{"I am booking a flight for my next trip.", "I need a plane ticket for next week."},
		categories:  []string{"One way", "Round trip", "Multi-city", "Deals"},
		nameA:       []string{"CA", "DL", "EK", "LH", "NH", "SQ", "MU", "BA"},
		nameB:       []string{"101", "219", "388", "452", "617", "733", "861", "958"},
		sorts:       []string{"Recommended", "Cheapest", "Fastest", "Earliest"},
	},
	{
		name: "movie", app: "CineGo", noun: "movie",
		guiMean: 8.0, guiSpread: 1, recMin: 4, recMax: 7,
		dims: []dim{
			{key: "genre", reveal: byQuery, lower: true, values: []string{"Comedy", "Action", "Animation", "Sci-fi", "Romance", "Horror", "Documentary"},
				phrases: []string{"I want to watch %s", "a film in the %s genre"}},
			{key: "cinema", label: "Cinema", reveal: byPage, values: []string{"Downtown", "Westside", "Eastside", "Riverside", "Uptown"},
				phrases: []string{"at a cinema in %s", "in a theater around %s"}},
			{key: "showtime", reveal: byFilter, lower: true, values: []string{"Afternoon", "Evening", "Late night"},
				phrases: []string{"showing in the %s", "with a show in the %s"}},
			{key: "format", reveal: byFilter, values: []string{"IMAX", "3D", "2D", "Dolby Atmos"},
				phrases: []string{"in %s", "screened in %s"}},
			{key: "language", reveal: byFilter, values: []string{"English", "Mandarin", "Subtitled"},
				phrases: []string{"the %s version", "in its %s version"}},
		},
		prefMin: 2, prefMax: 3,
		instructions: []string{
			"I have a free evening and want to catch a movie somewhere, what is worth seeing?",
			"My partner and I want to go to the cinema this weekend, can you find something?",
			"I'm in the mood for some %s at the cinema, could you find a good showing for me?",
			"Find me a good movie to watch at a cinema near here tonight, please.",
			"It has been a stressful week and I just want to sit in a dark cinema with some popcorn, what is on?",
		},
		revealQuery: 0.5,
		leads:       []string{"I want to see a movie at the cinema.", "I am planning a trip to the cinema."},
		categories:  []string{"Now showing", "Coming soon", "Cinemas", "Offers"},
		nameA:       []string{"Midnight", "Last", "Silent", "Electric", "Hidden", "Crimson", "Lost", "Brave"},
		nameB:       []string{"Horizon", "Signal", "Garden", "Voyage", "Echo", "Kingdom", "River", "Promise"},
		sorts:       []string{"Recommended", "Showtime", "Rating", "Distance"},
	},
	{
		name: "medicine", app: "MediMart", noun: "medicine",
		guiMean: 6.55, guiSpread: 1, recMin: 4, recMax: 5,
		dims: []dim{
			{key: "symptom", reveal: byQuery, lower: true, values: []string{"Cold", "Fever", "Headache", "Allergy", "Cough", "Sore throat", "Stomach ache"},
				phrases: []string{"I need something for %s", "it has to treat %s"}},
			{key: "form", reveal: byFilter, lower: true, values: []string{"Tablet", "Capsule", "Syrup", "Spray", "Granules"},
				phrases: []string{"in %s form", "taken as a %s"}},
			{key: "age", reveal: byFilter, lower: true, values: []string{"Adults", "Children", "Elderly"},
				phrases: []string{"suitable for %s", "made for %s"}},
			{key: "brand", reveal: byFilter, lower: true, values: []string{"Brand name", "Generic"},
				phrases: []string{"a %s product", "preferably %s"}},
			{key: "price", reveal: byFilter, values: []string{"Under $10", "$10-25", "$25+"},
				phrases: []string{"costing %s", "priced %s"}},
		},
		prefMin: 1, prefMax: 3,
		instructions: []string{
			"I'm not feeling well at all today, can you find me something at the pharmacy?",
			"Someone at home is a bit sick and we need some medicine delivered, can you help?",
			"I think I have %s again and would like to order something for it, please help.",
			"I need some medicine for %s delivered to my home today, can you help me?",
			"My little one has been unwell since yesterday and the pharmacy is closed, could you order something suitable for us online?",
		},
		revealQuery: 0.5,
		leads:       []string{"I want to order some medicine online.", "I need to buy medicine from the pharmacy."},
		categories:  []string{"Cold and flu", "Pain relief", "Vitamins", "Offers"},
		nameA:       []string{"Cura", "Vita", "Medi", "Relief", "Pura", "Calm", "Nova", "Sana"},
		nameB:       []string{"Plus", "Forte", "Care", "Max", "Kids", "Day", "Night", "Rapid"},
		sorts:       []string{"Recommended", "Best selling", "Price", "Rating"},
	},
	{
		name: "travel", app: "TripMate", noun: "trip package",
		guiMean: 19.3, guiSpread: 2, recMin: 5, recMax: 7,
		dims: []dim{
			{key: "destination", reveal: byQuery, values: []string{"Bali", "Kyoto", "Iceland", "Rome", "Yunnan", "Hawaii", "Swiss Alps", "Maldives"},
				phrases: []string{"I want a trip to %s", "I would love to visit %s"}},
			{key: "duration", label: "Duration", reveal: byPage, values: []string{"3 days", "5 days", "7 days", "10 days"},
				phrases: []string{"for %s", "lasting %s"}},
			{key: "budget", reveal: byFilter, values: []string{"Under $1000", "$1000-2500", "$2500-5000", "$5000+"},
				phrases: []string{"with a budget of %s", "costing %s in total"}},
			{key: "theme", reveal: byFilter, lower: true, values: []string{"Beach", "Culture", "Hiking", "Food tour", "Family fun"},
				phrases: []string{"focused on %s", "built around %s"}},
			{key: "hotel", label: "Hotel", reveal: byPage, atLeast: true, values: []string{"3-star", "4-star", "5-star"},
				phrases: []string{"staying in %s hotels or better", "with %s hotels at least"}},
			{key: "travellers", label: "Travellers", reveal: byPage, lower: true, values: []string{"Solo", "Couple", "Family", "Group"},
				phrases: []string{"for %s travel", "suited to %s travel"}},
			{key: "transport", reveal: byFilter, lower: true, values: []string{"Flight included", "Train", "Self-drive"},
				phrases: []string{"getting around by %s", "with %s transport"}},
		},
		prefMin: 3, prefMax: 5,
		instructions: []string{
			"I finally have some holiday coming up and I keep thinking about %s, can you plan something?",
			"We want to get away for a while and %s sounds lovely, could you find us a trip?",
			"I need a proper break this year, maybe %s, can you look for a travel package for me?",
			"Plan me a nice trip to %s this year, I really need it.",
			"My partner and I have two weeks off in the autumn and we dream of %s, could you put a package together?",
		},
		revealQuery: 1,
		leads:       []string{"I am planning a holiday package for this year.", "I want to book a complete trip for my next vacation."},
		categories:  []string{"Packages", "Tours", "Cruises", "Deals"},
		nameA:       []string{"Classic", "Hidden", "Ultimate", "Relaxing", "Grand", "Scenic", "Essential", "Golden"},
		nameB:       []string{"Escape", "Discovery", "Getaway", "Journey", "Explorer", "Retreat", "Adventure"},
		sorts:       []string{"Recommended", "Price", "Rating", "Duration"},
	},
}

// Channels returns the names of the channels the generator knows, in the
// published order: food, hotel, flight, movie, medicine, travel.
func Channels() []string {
	names := make([]string, len(channels))
	for i, c := range channels {
		names[i] = c.name
	}
	return names
}

func channelByName(name string) *channelSpec {
	for _, c := range channels {
		if c.name == name {
			return c
		}
	}
	return nil
}
